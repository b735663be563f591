#!/usr/bin/env bash
# Gathers the LM runtime's GPU kernel tests (tests/lm_cuda) into one small
# folder (default build/lm-cuda-carry, ignored by git) for the device tool's
# `carry`: the test program, stripped, and libfmt, which the GPU machine
# lacks. cuBLASLt is not carried (half a gigabyte): run_lm_cuda_h200.sh uses
# the machine's. Builds BUILD_DIR (default build/lmcuda-rel, the release
# preset, configured there if it is not yet) first, JOBS (default 2) at a time.
# Usage: bench/cuda/prepare_lm_cuda_carry.sh [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build/lmcuda-rel}"
out="${1:-$root/build/lm-cuda-carry}"
cd "$root"
[[ -f "$build/build.ninja" ]] || cmake --preset release -B "$build" >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target nuvec_lm_cuda_tests
rm -rf "$out"
mkdir -p "$out/lib"
cp "$build/tests/lm_cuda/nuvec_lm_cuda_tests" "$out/"
strip --strip-debug "$out/nuvec_lm_cuda_tests"
fmt="$(readlink -f /usr/lib/x86_64-linux-gnu/libfmt.so)"
cp "$fmt" "$out/lib/"
ln -sf "$(basename "$fmt")" "$out/lib/$(objdump -p "$fmt" | awk '/SONAME/ {print $2}')"
du -sh "$out"
