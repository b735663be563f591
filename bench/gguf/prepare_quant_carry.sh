#!/usr/bin/env bash
# Gathers what bench/gguf/run_quant_device.sh needs on the H200 machine into
# one folder for the device tool's `carry`: nuvec and nuvec_quant_dot_bench
# of this tree's release build and of BEFORE_BUILD (a release build of the
# commit before the change measured, as nuvec-before and
# nuvec_quant_dot_bench-before), the shared libraries they need that the
# machine lacks, llama.cpp's source (LLAMA_SRC_TAR: a .tar.xz of a tree
# with a top folder llama-src; llama.cpp is built there, never here), or
# LLAMA_BIN (a folder with llama-bench and llama-quantize from an earlier
# call's $OUT), and the scripts.
#   BEFORE_BUILD=... LLAMA_SRC_TAR=... prepare_quant_carry.sh OUT_DIR
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
before="${BEFORE_BUILD:?set BEFORE_BUILD to a release build dir of the commit before}"
after="$root/build/release"
out="$1"
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
cp "$after/tools/nuvec" "$after/bench/nuvec_quant_dot_bench" "$out/bin/"
cp "$before/tools/nuvec" "$out/bin/nuvec-before"
cp "$before/bench/nuvec_quant_dot_bench" "$out/bin/nuvec_quant_dot_bench-before"
for lib in $(ldd "$out"/bin/* | awk '/libfmt|libpcre2|libutf8proc|libsentencepiece|libz\.|libbenchmark/ {print $3}' | sort -u); do
  cp -L "$lib" "$out/lib/"
done
strip --strip-debug "$out"/bin/* 2>/dev/null || true
[ -n "${LLAMA_SRC_TAR:-}" ] && cp "$LLAMA_SRC_TAR" "$out/llama-src.tar.xz"
if [ -n "${LLAMA_BIN:-}" ]; then mkdir -p "$out/llama-bin" && cp "$LLAMA_BIN"/llama-bench "$LLAMA_BIN"/llama-quantize "$out/llama-bin/"; fi
cp "$root/bench/gguf/run_quant_device.sh" "$root/bench/gguf/compare_llama_cpp.sh" "$root/bench/gguf/make_random_gguf.py" \
  "$root/bench/gguf/compare_summary.py" "$root/bench/lm/run_quant_dot_bench.sh" "$root/bench/gguf/compare_prompts.sh" \
  "$root/bench/gguf/compare_prompts_summary.py" "$out/"
du -sh "$out"
