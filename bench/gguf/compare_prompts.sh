#!/usr/bin/env bash
# nuvec against llama.cpp on one GGUF file at several prompt lengths and
# thread counts, side by side in one run: per thread count, REPS rounds of
# llama-bench (-p PROMPTS -n 32 -r 1, for each flash-attention setting in
# FA, default "0 1"), then `nuvec run FILE --prompt-len 1 --max-new 33`
# (decode: 32 steps from an empty context, as tg32) and `nuvec run FILE
# --prompt-len P --max-new 32` per prompt (prefill).
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
  # Each round runs both programs once, so drift of a shared machine falls
  # on both; the summary takes medians over rounds.
  for ((rep = 1; rep <= reps; rep++)); do
    for fa in ${FA:-0 1}; do
      timeout 900 "$bin/llama-bench" -m "$file" -p "$pl" -n 32 -t "$t" -fa "$fa" -r 1 -o md 2>&1 | grep -E "^\|"
    done
    # Decode as llama-bench's tg32 measures it: 32 tokens from an empty context.
    echo "nuvec decode threads $t rep $rep:"
    timeout 600 "$bin/nuvec" run "$file" --prompt-len 1 --max-new 33 --threads "$t" 2>&1 >/dev/null | tail -1
    for p in "${prompts[@]}"; do
      echo "nuvec prompt $p threads $t rep $rep:"
      timeout 600 "$bin/nuvec" run "$file" --prompt-len "$p" --max-new 32 --threads "$t" 2>&1 >/dev/null | tail -1
    done
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
