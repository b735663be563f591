#!/usr/bin/env bash
# Gathers what bench/lm/run_amx_device.sh and run_amx_table.sh need on a machine without nuvec's
# build dependencies into one folder (default build/amx-carry) for the
# device tool's `carry`: `nuvec` of a build to compare with (BEFORE_BUILD,
# a release build of the commit before the change measured) and of this
# tree's release build, nuvec_roofline linked without OpenBLAS (which that
# machine lacks: roofline.cc compiled again without NUVEC_HAVE_OPENBLAS into
# build/amx-noblas), nuvec_lm_runtime_bench of both builds (BEFORE_BUILD
# must have it built), the kernel and LM tests, the shared libraries they
# need that the machine lacks (fmt, PCRE2, utf8proc, libsentencepiece, zlib), and the
# scripts. TESTS (default: all six) names the test programs to carry.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
before="${BEFORE_BUILD:?set BEFORE_BUILD to a release build dir of the commit before the AMX path}"
after=build/release
noblas=build/amx-noblas
out="${1:-$root/build/amx-carry}"
tests="${TESTS:-kernel_amx_test kernel_linear_test kernel_swiglu_test lm_attention_test lm_session_test lm_ops_test}"
# shellcheck disable=SC2086  # one target per word
cmake --build --preset release --target nuvec_tool nuvec_lm_runtime_bench $tests >/dev/null
mkdir -p "$noblas"
(cd "$after" && eval "$(ninja -t commands bench/CMakeFiles/nuvec_roofline.dir/lm/roofline.cc.o | tail -1 |
  sed 's/-DNUVEC_HAVE_OPENBLAS//; s#-o bench/CMakeFiles/nuvec_roofline.dir/lm/roofline.cc.o#-o ../amx-noblas/roofline.o#')" &&
  eval "$(ninja -t commands bench/nuvec_roofline | tail -1 | sed 's#bench/CMakeFiles/nuvec_roofline.dir/lm/roofline.cc.o#../amx-noblas/roofline.o#;
    s#-o bench/nuvec_roofline#-o ../amx-noblas/nuvec_roofline#; s#[^ ]*libopenblas[^ ]*##g; s#-Wl,-rpath,[^ ]*openblas[^ ]*##')")
rm -rf "$out"
mkdir -p "$out/before" "$out/after" "$out/tests" "$out/lib"
cp "$before/tools/nuvec" "$before/bench/nuvec_lm_runtime_bench" "$out/before/"
cp "$after/tools/nuvec" "$after/bench/nuvec_lm_runtime_bench" "$out/after/"
cp "$noblas/nuvec_roofline" "$out/after/"
for t in $tests; do cp "$(find "$after/tests" -name "$t" -type f | head -1)" "$out/tests/"; done
for lib in $(ldd "$after/tools/nuvec" "$before/tools/nuvec" | awk '/libfmt|libpcre2|libutf8proc|libsentencepiece|libz\./ {print $3}' | sort -u); do
  cp -L "$lib" "$out/lib/"
done
cp bench/lm/amx_run_common.sh bench/lm/run_amx_device.sh bench/lm/run_amx_warm.sh bench/lm/run_amx_table.sh bench/lm/torch_prefill.py \
  bench/lm/amx_summary.py bench/lm/amx_table.py "$out/"
strip --strip-debug "$out"/before/* "$out"/after/* "$out"/tests/* 2>/dev/null || true
du -sh "$out"
