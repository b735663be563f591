#!/usr/bin/env bash
# nuvec against llama.cpp on the same GGUF files, side by side in one run:
# a random 1.1B-shape Llama (22 layers, hidden 2048, GQA 32/4, vocab 32000)
# in f16, quantized by llama-quantize to Q4_K_M, Q8_0 and Q4_0; llama-bench
# (pp512, tg32) and `nuvec run` (prompt 512, 32 new tokens) at each thread
# count (with COMPARE_F32_PATH=1 once more with NUVEC_QUANT_DOT=off: the
# f32-activation path), then `nuvec profile` once per file for memory; with
# LONG_PROMPT=N, last, `nuvec profile` of the Q4_K_M file at an N-token
# prompt (the memory target at 8192) if the run has taken under
# LONG_PROMPT_BEFORE_S seconds (default 170) so far (LONG_PROMPT_FILE, default
# Q4_K_M; at most LONG_PROMPT_TIMEOUT_S seconds, default 100). With ALT_BIN
# (a second nuvec in BIN_DIR: the variant of an A/B) and ALT_FILES (e.g.
# "Q8_0"), that binary also runs twice per thread count on those files.
# FILES (default "Q4_K_M Q8_0 Q4_0") picks the files measured.
#   compare_llama_cpp.sh BIN_DIR GGUF_PY_DIR OUT_DIR [threads...]
# BIN_DIR holds llama-bench, llama-quantize (llama.cpp c392e509, 2025-02-20,
# CPU build: cmake -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF, Release) and nuvec.
set -uo pipefail
bin=$(realpath "$1"); gguf_py=$(realpath "$2"); out=$(realpath -m "$3"); shift 3
threads=("${@:-4 16}"); [ $# -eq 0 ] && threads=(4 16)
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
mkdir -p "$out"
log="$out/compare.txt"
{
  echo "date: $(date -u +%FT%TZ)"; echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"; echo "cores: $(nproc)"
  t0=$(date +%s)
  python3 "$here/make_random_gguf.py" "$gguf_py" "$work/f16.gguf"
  for q in Q4_K_M Q8_0 Q4_0; do
    "$bin/llama-quantize" "$work/f16.gguf" "$work/$q.gguf" $q "$(nproc)" > /dev/null 2>&1 || echo "quantize $q failed"
  done
  rm -f "$work/f16.gguf"
  echo "prepared in $(( $(date +%s) - t0 )) s"; ls -l "$work"
  for q in ${FILES:-Q4_K_M Q8_0 Q4_0}; do
    f="$work/$q.gguf"
    echo; echo "=== $q"
    tl=$(IFS=,; echo "${threads[*]}")
    timeout 120 "$bin/llama-bench" -m "$f" -p 512 -n 32 -t "$tl" -r 2 -o md 2>&1 | grep -E "^\|"
    for t in "${threads[@]}"; do
      for rep in 1 2; do
        echo "nuvec run $q threads $t rep $rep:"
        timeout 90 "$bin/nuvec" run "$f" --prompt-len 512 --max-new 32 --threads "$t" 2>&1 >/dev/null | tail -3
      done
      if [ "${COMPARE_F32_PATH:-0}" = 1 ]; then
        echo "nuvec run $q threads $t NUVEC_QUANT_DOT=off:"
        NUVEC_QUANT_DOT=off timeout 90 "$bin/nuvec" run "$f" --prompt-len 512 --max-new 32 --threads "$t" 2>&1 >/dev/null | tail -3
      fi
      if [ -n "${ALT_BIN:-}" ] && [[ " ${ALT_FILES:-} " == *" $q "* ]]; then
        for rep in 1 2; do
          echo "$ALT_BIN run $q threads $t rep $rep:"
          timeout 90 "$bin/$ALT_BIN" run "$f" --prompt-len 512 --max-new 32 --threads "$t" 2>&1 >/dev/null | tail -3
        done
      fi
    done
    timeout 90 "$bin/nuvec" profile "$f" --prompt-len 512 --max-new 32 --threads "${threads[-1]}" -q 2>&1 | head -12
  done
  if [ -n "${LONG_PROMPT:-}" ]; then
    if [ $(( $(date +%s) - t0 )) -lt "${LONG_PROMPT_BEFORE_S:-170}" ]; then
      echo; echo "=== ${LONG_PROMPT_FILE:-Q4_K_M}, prompt ${LONG_PROMPT}"
      timeout "${LONG_PROMPT_TIMEOUT_S:-100}" "$bin/nuvec" profile "$work/${LONG_PROMPT_FILE:-Q4_K_M}.gguf" \
        --prompt-len "$LONG_PROMPT" --max-new 2 \
        --threads "${threads[-1]}" -q 2>&1 | head -12
    else
      echo; echo "prompt ${LONG_PROMPT} skipped: $(( $(date +%s) - t0 )) s had passed"
    fi
  fi
  echo "total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$log"
