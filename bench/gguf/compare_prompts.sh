#!/usr/bin/env bash
# nuvec against llama.cpp on one GGUF file at several prompt lengths and
# thread counts, side by side in one run: per thread count, llama-bench
# (-p PROMPTS -n 32, without and with flash attention, -r REPS) and then
# `nuvec run FILE --prompt-len 1 --max-new 33` (decode: 32 steps from an
# empty context, as tg32) and `nuvec run FILE --prompt-len P --max-new 32`
# (prefill), each REPS times.
# Tables: compare_prompts_summary.py on the output.
#   compare_prompts.sh BIN_DIR FILE "PROMPTS" "THREADS" [REPS]
# e.g. compare_prompts.sh /work/llama-bin mha-bf16.gguf "512 2048 8192" "2" 1
# BIN_DIR holds llama-bench (llama.cpp c392e509, CPU build: cmake
# -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF, Release) and nuvec.
set -uo pipefail
bin=$(realpath "$1"); file=$(realpath "$2"); read -ra prompts <<< "$3"; read -ra threads <<< "$4"
reps="${5:-1}"
echo "date: $(date -u +%FT%TZ) | cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) | cores: $(nproc)"
echo "file: $file ($(stat -c %s "$file") bytes) | load: $(cut -d' ' -f1-3 /proc/loadavg)"
pl=$(IFS=,; echo "${prompts[*]}")
for t in "${threads[@]}"; do
  echo; echo "=== threads $t"
  timeout 900 "$bin/llama-bench" -m "$file" -p "$pl" -n 32 -t "$t" -fa 0,1 -r "$reps" -o md 2>&1 | grep -E "^\|"
  # Decode as llama-bench's tg32 measures it: 32 tokens from an empty context.
  for ((rep = 1; rep <= reps; rep++)); do
    echo "nuvec decode threads $t rep $rep:"
    timeout 600 "$bin/nuvec" run "$file" --prompt-len 1 --max-new 33 --threads "$t" 2>&1 >/dev/null | tail -1
  done
  for p in "${prompts[@]}"; do
    for ((rep = 1; rep <= reps; rep++)); do
      echo "nuvec prompt $p threads $t rep $rep:"
      timeout 600 "$bin/nuvec" run "$file" --prompt-len "$p" --max-new 32 --threads "$t" 2>&1 >/dev/null | tail -1
    done
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
