#!/usr/bin/env bash
# Builds nuvec._nuvec for the GPU machine's python3 (3.12 there, 3.11 here),
# there or here (PYTHON, PYBIND11_INCLUDES below), from a carried folder: include/ (the public headers), gen/nuvec/version.h
# (from the build), python/src and python/nuvec, the layers' libnuvec_*.a (a CUDA release
# build's), torch_allocator.o (the nuvec_python target's object of
# src/cuda/torch_allocator.cc), fmt-include/ and lib/libfmt.so* (that machine
# has no fmt). bench/results/2026-12-01-python-load-file.md says how it ran.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# SITE: the folder the package goes into (default site/); CUDART=shared links the shared CUDA runtime
# (libcudart.so.13, which PyTorch's wheels load too) instead of the static one.
out=${SITE:-$here/site}/nuvec
mkdir -p "$out" "$here/obj"
cp "$here"/python/nuvec/*.py "$out/"
# PYTHON: the interpreter to build for (default python3); PYBIND11_INCLUDES: its -I flags where it has
# no pybind11 package (e.g. "-I/usr/include -I/root/.pyenv/versions/3.12.1/include/python3.12", to
# build a 3.12 module on this machine, whose pybind11 is Debian's, for the GPU machine).
py=${PYTHON:-python3}
suffix=$("$py" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
cuda=${CUDA_HOME:-/usr/local/cuda}
if [[ ${CUDART:-static} == shared ]]; then
  cudart="-L$(dirname "$(ls $cuda/lib64/libcudart.so $cuda/targets/x86_64-linux/lib/libcudart.so $cuda/lib/libcudart.so 2>/dev/null | head -1)") -lcudart"
else
  cudart=$(ls $cuda/lib64/libcudart_static.a $cuda/targets/x86_64-linux/lib/libcudart_static.a $cuda/lib/libcudart_static.a 2>/dev/null | head -1)
fi
includes="${PYBIND11_INCLUDES:-$("$py" -m pybind11 --includes)} -I$here/include -I$here/gen -I$here/fmt-include"
pids=()
for src in "$here"/python/src/*.cc; do
  g++ -O2 -std=c++20 -fPIC -fvisibility=hidden -DNUVEC_PYTHON_TORCH_ALLOCATOR $includes -c "$src" \
    -o "$here/obj/$(basename "$src" .cc).o" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
g++ -shared -o "$out/_nuvec$suffix" "$here"/obj/*.o "$here/torch_allocator.o" -Wl,--start-group "$here"/libnuvec_*.a -Wl,--end-group $cudart \
  -Wl,--exclude-libs,ALL -L"$here/lib" -lfmt -l:libz.so.1 -ldl -lrt -lpthread -Wl,-rpath,'$ORIGIN/../../lib'
echo "built $out/_nuvec$suffix"
