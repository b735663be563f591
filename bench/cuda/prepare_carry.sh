#!/usr/bin/env bash
# Gathers what a GPU machine without nuvec's build dependencies needs into
# one small folder (default build/cuda-carry, ignored by git), for the device
# tool's `carry`: the CUDA tests and benchmarks, the PyTorch plugin,
# the layers' libnuvec_*.a and fmt (library and headers, which that machine lacks) for
# building the pair benchmark there. Run after building BUILD_DIR (default
# build/cuda) with the CUDA toolkit.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build/cuda}"
out="${1:-$root/build/cuda-carry}"
rm -rf "$out"
mkdir -p "$out/tests/cuda" "$out/bench/cuda" "$out/lib" "$out/fmt-include"
cp "$build/tests/contract_test" "$out/tests/"
cp "$build"/tests/cuda/cuda_*_test "$out/tests/cuda/"
# The LM runtime's GPU kernel tests, where this build has them (bench/cuda/run_lm_cuda_h200.sh).
if [[ -x "$build/tests/lm_cuda/nuvec_lm_cuda_tests" ]]; then
  mkdir -p "$out/tests/lm_cuda"
  cp "$build/tests/lm_cuda/nuvec_lm_cuda_tests" "$out/tests/lm_cuda/"
  strip --strip-debug "$out/tests/lm_cuda/nuvec_lm_cuda_tests"
fi
cp "$build"/bench/cuda/nuvec_cuda_* "$root/bench/cuda/torch_ddp_step.py" "$root/bench/cuda/nvml_process.py" \
  "$root/bench/cuda/torch_llama_bench.py" "$out/bench/cuda/"
cp "$build/libnuvec_torch_alloc.so" "$build"/libnuvec_*.a "$out/"
fmt="$(readlink -f /usr/lib/x86_64-linux-gnu/libfmt.so)"
cp "$fmt" "$out/lib/"
ln -sf "$(basename "$fmt")" "$out/lib/libfmt.so"
ln -sf "$(basename "$fmt")" "$out/lib/$(objdump -p "$fmt" | awk '/SONAME/ {print $2}')"
# The plugin finds libfmt beside it ($ORIGIN).
cp -P "$out"/lib/libfmt.so.* "$out/" 2>/dev/null || true
cp "$fmt" "$out/"
cp -r /usr/include/fmt "$out/fmt-include/"
# The Python module is built there, for that machine's python3 (bench/python/build_module_on_gpu.sh
# says what it needs): the public headers, the generated version header, the module's sources, the
# plugin's object as the nuvec_python target compiled it.
mkdir -p "$out/gen/nuvec" "$out/python"
cp -r "$root/include" "$out/include"
cp "$build/include/nuvec/version.h" "$out/gen/nuvec/"
cp -r "$root/python/src" "$root/python/nuvec" "$root/python/tests" "$out/python/"
cp "$build/python/CMakeFiles/nuvec_python.dir/__/src/cuda/torch_allocator.cc.o" "$out/torch_allocator.o"
cp "$root/bench/python/build_module_on_gpu.sh" "$out/"
strip --strip-debug "$out"/tests/*_test "$out"/tests/cuda/* "$out"/bench/cuda/* 2>/dev/null || true
du -sh "$out"
