#!/usr/bin/env bash
# Gathers the LM runtime on the GPU into one small folder (default
# build/lm-cuda-carry, ignored by git) for the device tool's `carry`: the GPU
# tests (tests/lm_cuda: kernels and the session) and the `nuvec` command,
# both stripped, and the shared libraries they link that a bare GPU machine
# may lack (libfmt, the tokenizers' libsentencepiece, libutf8proc, libpcre2),
# in lib/. cuBLASLt is not carried (half a gigabyte): run_lm_cuda_h200.sh
# uses the machine's; nor are the C and C++ runtimes, which every machine
# has. Builds BUILD_DIR (default build/lmcuda-rel, the release preset,
# configured there if it is not yet) first, JOBS (default 2) at a time.
# For bench/cuda/compare_gpu_h200.sh (the side by side with llama.cpp and
# PyTorch) it adds, with COMPARE=1, nuvec_gpu_session_bench (the benchmarks
# turned on in BUILD_DIR), llama.cpp's source (LLAMA_SRC_TAR: a .tar.xz with
# a top folder llama-src, built there) or LLAMA_BIN (a folder with an
# earlier call's llama-bench and llama-quantize), and COMMIT.
# Usage: [BUILD_DIR=build/...] [COMPARE=1 LLAMA_SRC_TAR=...|LLAMA_BIN=...]
#        bench/cuda/prepare_lm_cuda_carry.sh [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build/lmcuda-rel}"
out="${1:-$root/build/lm-cuda-carry}"
cd "$root"
[[ -f "$build/build.ninja" ]] || cmake --preset release -B "$build" >/dev/null
programs=("$build/tests/lm_cuda/nuvec_lm_cuda_tests" "$build/tools/nuvec")
targets=(nuvec_lm_cuda_tests nuvec_tool)
if [[ "${COMPARE:-0}" == 1 ]]; then
  cmake -B "$build" -DNUVEC_BUILD_BENCHMARKS=ON >/dev/null
  programs+=("$build/bench/cuda/nuvec_gpu_session_bench")
  targets+=(nuvec_gpu_session_bench)
fi
cmake --build "$build" -j "${JOBS:-2}" --target "${targets[@]}"
rm -rf "$out"
mkdir -p "$out/lib"
for program in "${programs[@]}"; do
  cp "$program" "$out/"
  strip --strip-debug "$out/$(basename "$program")"
done
# Each library the two link that is not the C/C++ runtime, the loader, zlib
# or CUDA's own, as its SONAME (what the loader asks for).
ldd "${programs[@]/#*\//$out/}" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libz|ld-linux[^/]*|libcublas[^/]*|libcudart[^/]*)\.so' |
  while read -r lib; do
    real="$(readlink -f "$lib")"
    cp "$real" "$out/lib/"
    soname="$(objdump -p "$real" | awk '/SONAME/ {print $2}')"
    [[ -z "$soname" || "$soname" == "$(basename "$real")" ]] || ln -sf "$(basename "$real")" "$out/lib/$soname"
  done
if [[ "${COMPARE:-0}" == 1 ]]; then
  git -C "$root" log -1 --format='%h %s' | cut -c1-100 > "$out/COMMIT"
  [[ -z "${LLAMA_SRC_TAR:-}" ]] || cp "$LLAMA_SRC_TAR" "$out/llama-src.tar.xz"
  if [[ -n "${LLAMA_BIN:-}" ]]; then
    mkdir -p "$out/llama-bin"
    cp "$LLAMA_BIN/llama-bench" "$LLAMA_BIN/llama-quantize" "$out/llama-bin/"
  fi
fi
ls "$out/lib"
du -sh "$out"
