#!/usr/bin/env bash
# Builds a fully static `nuvec` at build/lm-static/tools/nuvec, to run where
# nuvec's libraries are not installed (the H200 machine, for
# compare_transformers.py): fmt is used header-only (a two-line CMake shim
# maps fmt::fmt to FMT_HEADER_ONLY; Debian ships no static libfmt), and the
# CUDA backend is left out (the comparison runs on the CPU); zlib is linked
# from its static archive. Debian ships no static libsentencepiece, so this
# build reads tokenizer.json and GGUF vocabularies, not tokenizer.model.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/lm-static}
mkdir -p "$build/fmt-shim"
cat > "$build/fmt-shim/fmt-config.cmake" <<'SHIM'
add_library(fmt::fmt INTERFACE IMPORTED)
set_target_properties(fmt::fmt PROPERTIES INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
SHIM
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -Dfmt_DIR="$PWD/$build/fmt-shim" \
  -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DNUVEC_WITH_SENTENCEPIECE=OFF -DNUVEC_BUILD_TESTS=OFF -DNUVEC_BUILD_BENCHMARKS=OFF \
  -DZLIB_LIBRARY_RELEASE=/usr/lib/x86_64-linux-gnu/libz.a -DCMAKE_EXE_LINKER_FLAGS=-static >/dev/null
ninja -C "$build" -j "${JOBS:-2}" tools/nuvec
file "$build/tools/nuvec"
