#!/usr/bin/env bash
# Builds bench/cuda/pair_bench.cc on a machine with PyTorch (its headers and
# libc10_cuda) against a nuvec build made elsewhere (BUILD_DIR, default
# build/cuda: the layers' libnuvec_*.a, and fmt's library and headers as
# prepare_carry.sh gathers them). torch_allocator.cc is compiled without
# PyTorch's headers, which carry a different fmt.
# Usage: bench/cuda/build_pair_bench.sh OUTPUT_BINARY
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build/cuda}"
out="$1"
torch_dir="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
cuda="${CUDA_HOME:-/usr/local/cuda}"
fmt=()
[[ -d "$build/fmt-include" ]] && fmt=(-I"$build/fmt-include")
objects="$(mktemp -d)"
set -x
g++ -O2 -std=c++20 -DFMT_SHARED "${fmt[@]}" -I"$root/include" -I"$root/src" -I"$cuda/include" \
  -c "$root/src/cuda/torch_allocator.cc" -o "$objects/torch_allocator.o"
g++ -O2 -std=c++20 -DFMT_SHARED -I"$root/include" -I"$root/src" -I"$root/bench" -I"$torch_dir/include" "${fmt[@]}" -I"$cuda/include" \
  -c "$root/bench/cuda/pair_bench.cc" -o "$objects/pair_bench.o"
# The layers it uses, each before those it links (docs/architecture.md).
g++ "$objects/pair_bench.o" "$objects/torch_allocator.o" \
  "$build/libnuvec_cuda.a" "$build/libnuvec_io.a" "$build/libnuvec_cpu.a" "$build/libnuvec_core.a" \
  -L"$build/lib" -lfmt -lz -Wl,-rpath,"$build/lib" \
  -L"$torch_dir/lib" -lc10_cuda -lc10 -Wl,-rpath,"$torch_dir/lib" \
  -L"$cuda/lib64" -lcudart -Wl,-rpath,"$cuda/lib64" -ldl -lrt -lpthread -o "$out"
