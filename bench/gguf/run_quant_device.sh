#!/usr/bin/env bash
# Q8_0/Q4_0 products and decode against llama.cpp on the H200 machine's CPU,
# in one device call, from the folder bench/gguf/prepare_quant_carry.sh
# makes (CARRY below): llama.cpp built from its source there (or its
# binaries from an earlier call's $OUT, in CARRY/llama-bin), then
# nuvec_quant_dot_bench before/after (bench/lm/run_quant_dot_bench.sh;
# NUVEC_BENCH_THREADS, NUVEC_QUANT_PREFETCHES, BENCH_FILTER, BENCH_ROUNDS;
# BENCH=0 skips it), then bench/gguf/compare_llama_cpp.sh with the after
# build as nuvec and the before build as ALT_BIN=nuvec-before (ALT_FILES,
# FILES, LONG_PROMPT as that script takes them). THREADS (default "4 16").
# COMPARE=0 skips the quantized files; BF16_SHAPES adds bf16 files against
# llama.cpp (below).
# Writes to $OUT: compare.txt, quant_dot.txt, and llama-bench /
# llama-quantize (stripped) for the next call.
#   bash run_quant_device.sh CARRY
set -uo pipefail
carry=$(realpath "$1")
out="${OUT:-/tmp/quant-out}"
mkdir -p "$out"
export LD_LIBRARY_PATH="$carry/lib"
bin=/tmp/quant-bin
mkdir -p "$bin"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) | cores $(nproc) | $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
if [ -x "$bin/llama-bench" ]; then
  :  # an earlier run of this script in the same call built it
elif [ -x "$carry/llama-bin/llama-bench" ]; then
  cp "$carry/llama-bin/llama-bench" "$carry/llama-bin/llama-quantize" "$bin/"
else
  mkdir -p /tmp/llama && tar -xJf "$carry/llama-src.tar.xz" -C /tmp/llama
  cmake -S /tmp/llama/llama-src -B /tmp/llama/build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=ON -DLLAMA_CURL=OFF > /tmp/llama/cmake.log 2>&1 || { tail -20 /tmp/llama/cmake.log; exit 1; }
  cmake --build /tmp/llama/build -j "$(nproc)" --target llama-bench llama-quantize > /tmp/llama/build.log 2>&1 ||
    { tail -20 /tmp/llama/build.log; exit 1; }
  cp /tmp/llama/build/bin/llama-bench /tmp/llama/build/bin/llama-quantize "$bin/"
  strip "$bin/llama-bench" "$bin/llama-quantize"
  cp "$bin/llama-bench" "$bin/llama-quantize" "$out/"
  echo "llama.cpp built in $(( $(date +%s) - t0 )) s"
fi
mkdir -p /tmp/gguf-py && tar -xJf "$carry/llama-src.tar.xz" -C /tmp/gguf-py llama-src/gguf-py
cp "$carry/bin/nuvec" "$bin/nuvec"; cp "$carry/bin/nuvec-before" "$bin/nuvec-before"
if [ "${BENCH:-1}" = 1 ]; then
  NUVEC_BENCH_THREADS="${NUVEC_BENCH_THREADS:-1 4}" bash "$carry/run_quant_dot_bench.sh" \
    "$carry/bin/nuvec_quant_dot_bench-before" "$carry/bin/nuvec_quant_dot_bench" "${BENCH_ROUNDS:-1}" \
    "${BENCH_FILTER:-q8_0|q4_0}" 2>&1 | tee "$out/quant_dot.txt"
  echo "bench done at $(( $(date +%s) - t0 )) s"
fi
if [ "${COMPARE:-1}" = 1 ]; then
  # shellcheck disable=SC2086  # thread counts are words
  ALT_BIN="${ALT_BIN-nuvec-before}" ALT_FILES="${ALT_FILES-Q8_0 Q4_0}" \
    bash "$carry/compare_llama_cpp.sh" "$bin" /tmp/gguf-py/llama-src/gguf-py "$out" ${THREADS:-4 16} > /dev/null 2>&1
  python3 "$carry/compare_summary.py" "$out/compare.txt" | tee "$out/summary.txt"
fi
# BF16_SHAPES: files separated by ";", each "NAME:SHAPE:PROMPTS:THREADS"
# with SHAPE as make_random_gguf.py takes it ("layers hidden ff heads
# kv_heads vocab [tied]"), e.g. "builtin:12 1024 2816 16 4 32000:512:4 16;
# mha:8 1024 2816 16 16 32000 1:2048 8192:16" (the built-in model's shape;
# the issue's multi-head model). Each a random bf16 GGUF (f16 from
# make_random_gguf.py, then llama-quantize BF16), measured by
# compare_prompts.sh (BF16_REPS rounds, default 2): NAME.txt,
# NAME-summary.txt.
IFS=';' read -ra bf16_files <<< "${BF16_SHAPES:-}"
for entry in "${bf16_files[@]}"; do
  IFS=':' read -r name shape prompts threads <<< "$entry"
  # shellcheck disable=SC2086  # the shape is words
  python3 "$carry/make_random_gguf.py" /tmp/gguf-py/llama-src/gguf-py "/tmp/$name-f16.gguf" $shape > /dev/null &&
    "$bin/llama-quantize" "/tmp/$name-f16.gguf" "/tmp/$name.gguf" BF16 "$(nproc)" > /dev/null 2>&1 &&
    rm -f "/tmp/$name-f16.gguf"
  bash "$carry/compare_prompts.sh" "$bin" "/tmp/$name.gguf" "$prompts" "$threads" "${BF16_REPS:-2}" > "$out/$name.txt" 2>&1
  python3 "$carry/compare_prompts_summary.py" "$out/$name.txt" | tee "$out/$name-summary.txt"
  echo "$name done at $(( $(date +%s) - t0 )) s"
done
echo "total $(( $(date +%s) - t0 )) s"
