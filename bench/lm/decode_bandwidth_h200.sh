#!/usr/bin/env bash
# Decode's weight bandwidth as a fraction of the machine's read bandwidth,
# on the H200 machine's 16-core Xeon, in one device call, from the folder
# bench/lm/prepare_bandwidth_carry.sh makes (CARRY): `nuvec roofline` at
# each thread count (4 KiB and huge pages), then per file and thread count
# `nuvec profile FILE --prompt-len 512 --max-new 64 --threads T --json`,
# and the table of decode's fraction (decode_bandwidth_table.py).
#
# The files: random-weight GGUFs of the 1.1B shape (22 layers, hidden 2048,
# GQA 32/4, ff 5632, vocab 32000). With LLAMA_BIN (a folder with
# llama-quantize, as an earlier call's $OUT has it) and GGUF_PY (llama.cpp's
# gguf-py), the f16 file of make_random_gguf.py quantized by llama-quantize
# as bench/gguf/compare_llama_cpp.sh makes them (BF16 too); else
# bench/lm/make_decode_gguf.py writes each type's blocks itself (numpy
# alone), with llama-quantize's choice of type per tensor: the same bytes
# per token.
#   THREADS (default "1 2 4 8 16"), FILES (default "Q4_K_M Q8_0 Q4_0 Q6_K
#   BF16"), REPS (profiles per file and thread count, default 1),
#   PROMPT (512), NEW (64), GGUF_DIR (where the files are made, or found
#   already made as <TYPE>.gguf: kept then; default /tmp/bandwidth-gguf,
#   each file removed after its profiles), ROOFLINE=0 skips the roofline
#   bash decode_bandwidth_h200.sh CARRY
# Writes to $OUT: roofline.txt, profile-<file>-t<T>-r<rep>.json, table.md.
set -uo pipefail
carry=$(realpath "$1")
out="${OUT:-/tmp/bandwidth-out}"
mkdir -p "$out"
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nuvec="$carry/bin/nuvec"
threads="${THREADS:-1 2 4 8 16}"
files="${FILES:-Q4_K_M Q8_0 Q4_0 Q6_K BF16}"
work="${GGUF_DIR:-/tmp/bandwidth-gguf}"
mkdir -p "$work"
t0=$(date +%s)
{
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) | cores $(nproc) | $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  echo "nuvec: $("$nuvec" --version) ($(cat "$carry/COMMIT" 2>/dev/null))"
} | tee "$out/machine.txt"

tl=$(echo "$threads" | tr ' ' ',')
if [ "${ROOFLINE:-1}" = 1 ]; then
  "$nuvec" roofline --threads "$tl" --pages both | tee "$out/roofline.txt"
  echo "roofline done at $(( $(date +%s) - t0 )) s"
fi

for q in $files; do
  f="$work/$q.gguf"
  made=0
  if [ ! -f "$f" ]; then
    made=1
    if [ -n "${LLAMA_BIN:-}" ] && [ -n "${GGUF_PY:-}" ]; then
      [ -f "$work/f16.gguf" ] || python3 "$carry/make_random_gguf.py" "$GGUF_PY" "$work/f16.gguf" > /dev/null
      "$LLAMA_BIN/llama-quantize" "$work/f16.gguf" "$f" "$q" "$(nproc)" > /dev/null 2>&1 || echo "quantize $q failed"
    else
      python3 "$carry/make_decode_gguf.py" "$q" "$f" || echo "making $q failed"
    fi
  fi
  for t in $threads; do
    for rep in $(seq "${REPS:-1}"); do
      timeout 300 "$nuvec" profile "$f" --prompt-len "${PROMPT:-512}" --max-new "${NEW:-64}" --threads "$t" -q --json \
        > "$out/profile-$q-t$t-r$rep.json" 2> "$out/profile-$q-t$t-r$rep.err" || echo "profile $q $t threads failed"
    done
  done
  [ "$made" = 1 ] && rm -f "$f"
  echo "$q done at $(( $(date +%s) - t0 )) s"
done
rm -f "$work/f16.gguf"
python3 "$carry/decode_bandwidth_table.py" "$out"/profile-*.json | tee "$out/table.md"
echo "total $(( $(date +%s) - t0 )) s"
