#!/usr/bin/env bash
# Makes the GGUF fixtures of tests/lm/gguf and llama.cpp's logits for them.
# Runs where llama.cpp's source, torch, transformers and sentencepiece are
# (the fixtures were made on the H200 machine's CPU, llama.cpp of
# 2025-02-20, c392e509):
#   make_fixtures.sh LLAMA_CPP_SRC OUT_DIR
# OUT_DIR gets <name>.gguf and <name>.logits (float32 [tokens][vocab], every
# position of TOKENS below, from llama_logits.cpp with an f32 KV cache), and
# bin/ with llama.cpp's static llama-bench and llama-quantize.
set -euo pipefail
src=$(realpath "$1"); out=$(realpath -m "$2"); here=$(dirname "$(realpath "$0")")
mkdir -p "$out" "$out/bin"
work=$(mktemp -d)
TOKENS="1 37 201 5 88 140 12 255 64 3 99 180 27 222 150 7 45 113 250 31 76 190 9 128"

cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
cmake --build "$work/build" -j"$(nproc)" --target llama-quantize llama-bench llama ggml >/dev/null
b="$work/build"
g++ -O2 -std=c++17 -I"$src/include" -I"$src/ggml/include" "$here/llama_logits.cpp" -o "$out/bin/llama_logits" \
  $(find "$b" -name libllama.a) $(find "$b" -name libggml.a) $(find "$b" -name libggml-cpu.a) \
  $(find "$b" -name libggml-base.a) -fopenmp -lpthread -lm -ldl
cp "$b/bin/llama-quantize" "$b/bin/llama-bench" "$out/bin/"
echo "built llama.cpp $(date -u +%FT%TZ)"

for arch in llama qwen2; do
  python3 "$here/make_tiny_model.py" $arch "$work/$arch" "$src/README.md" "$src"/*.py "$src/gguf-py/gguf"/*.py
  for t in f32 f16 bf16; do
    python3 "$src/convert_hf_to_gguf.py" "$work/$arch" --outtype $t --outfile "$out/$arch-$t.gguf" >/dev/null 2>&1
  done
done
for t in Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K; do
  "$out/bin/llama-quantize" --pure "$out/llama-f32.gguf" "$out/llama-$t.gguf" $t >/dev/null 2>&1
done
# A real mixture (Q4_K with Q6_K for some tensors), and a K-quant Qwen2.
"$out/bin/llama-quantize" "$out/llama-f32.gguf" "$out/llama-Q4_K_M.gguf" Q4_K_M >/dev/null 2>&1
"$out/bin/llama-quantize" --pure "$out/qwen2-f32.gguf" "$out/qwen2-Q4_K.gguf" Q4_K >/dev/null 2>&1
for f in "$out"/*.gguf; do
  "$out/bin/llama_logits" "$f" "${f%.gguf}.logits" 4 $TOKENS 2>/dev/null
done
echo "$TOKENS" > "$out/tokens.txt"
ls -l "$out"
