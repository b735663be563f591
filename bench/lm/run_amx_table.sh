#!/usr/bin/env bash
# The AMX prefill table on a machine with AMX (the H200 machine's Xeon), in
# one run, from the folder bench/lm/prepare_amx_carry.sh makes, within about
# 160 s (the 8192-token steps are skipped once SECONDS passes their mark, and
# say so):
# - the AMX kernel and attention tests on the tile unit (and LM session tests);
# - nuvec_roofline's AMX section at 16 and 4 threads: the tile unit's peak,
#   what the tile loads leave of it (L1, L2, beyond; W's rows 4 KiB apart;
#   prefetch), and linear_amx() under its blockings on the models' products;
# - the issue's table: for the built-in model and a 1.1B shape (22 layers,
#   hidden 2048, GQA 32/4, MLP 5632, vocabulary 32000, random bf16 weights from
#   `nuvec demo-model`), at 4 and 16 threads, nuvec_lm_runtime_bench of this
#   build (one untimed prefill of 512 tokens, then the median of 3; 8 decode
#   steps) and PyTorch's bf16 prefill and decode on the same checkpoint
#   (torch_prefill.py: one untimed pass, median of 3; 8 decode steps);
# - long prompts without GQA (the built-in shape with 16 KV heads of 16):
#   `nuvec profile` (one prefill, cold, in a fresh process) of the build
#   before (BEFORE: attention in f32 AVX-512) and this one (attention on the
#   tiles), and PyTorch (its default attention, SDPA), at 2048 and 8192
#   tokens, 16 threads;
# - `nuvec profile` of the 512-token prefill at 16 threads (peak_with_mapped /
#   floor) and the logits of both builds against --exact.
# Writes log.txt and amx-table.tar.gz (every raw file) to $OUT.
# Usage (in the carry folder): bash run_amx_table.sh
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
export LD_LIBRARY_PATH="$here/lib"
final="${OUT:-/tmp/amx-out}"
out=/tmp/amx-table
mkdir -p "$final" "$out"
. ./amx_run_common.sh
# until SECONDS: true while the run is inside that many seconds.
until_s() { (( SECONDS < $1 )) || { echo "(skipped: past ${1} s)"; return 1; }; }
lmrt() {  # BUILD MODEL THREADS
  local run="lmrt-$1-$2-$3"
  timeout 60 ./$1/nuvec_lm_runtime_bench /tmp/$2 --prompt 512 --decode-steps 8 --repetitions 3 --threads $3 \
    > "$out/$run.json" 2> "$out/$run.err"
  python3 -c "
import json, sys; j = json.load(open(sys.argv[1]))
print(sys.argv[2], j['kernels'], j['threads'], 'prefill tok/s', round(j['prefill']['tokens_per_second']),
      'decode tok/s', round(j['decode']['tokens_per_second'], 1))" "$out/$run.json" "$run"
}
profile() {  # BUILD MODEL PROMPT THREADS [TIMEOUT]
  local run="profile-$1-$2-$3-$4"
  timeout ${5:-60} ./$1/nuvec profile /tmp/$2 --prompt-len $3 --max-new 4 --threads $4 --json > "$out/$run.json" 2> "$out/$run.err"
  python3 -c "
import json,sys; p=json.load(open(sys.argv[1]))
print(sys.argv[2], p['kernels'], *[(f['phase'], round(f['tokens_per_second'],1), round(f['peak_with_mapped_over_floor'],3)) for f in p['phases']])" \
    "$out/$run.json" "$run"
}

{
  step machine
  machine_info

  step tests
  run_tests kernel_amx_test lm_attention_test lm_session_test

  step "roofline, 16 threads"
  timeout 40 ./after/nuvec_roofline --only amx --threads 16
  step "roofline, 4 threads"
  timeout 20 ./after/nuvec_roofline --only amx --threads 4 --quick

  step models
  ./after/nuvec demo-model /tmp/builtin > /dev/null
  ./after/nuvec demo-model /tmp/mha --kv-heads 16 --context 16384 > /dev/null
  ./after/nuvec demo-model /tmp/llama1b --layers 22 --hidden 2048 --heads 32 --kv-heads 4 --intermediate 5632 \
    --vocab 32000 --context 4096 > /dev/null
  du -sh /tmp/builtin /tmp/mha /tmp/llama1b

  for model in builtin llama1b; do
    step "nuvec $model"
    for threads in 4 16; do lmrt after $model $threads; done
    step "torch $model"
    PYTHONUNBUFFERED=1 timeout 60 python3 torch_prefill.py --model /tmp/$model --threads 4 16 --repeats 3 --max-new 8 \
      | tee "$out/torch-$model.jsonl"
  done

  step "long prompts without GQA, 16 threads: 2048"
  for build in before after; do profile $build mha 2048 16; done
  PYTHONUNBUFFERED=1 timeout 40 python3 torch_prefill.py --model /tmp/mha --threads 16 --prompt-len 2048 --repeats 1 \
    --max-new 0 | tee "$out/torch-mha-2048.jsonl"

  step "peak_with_mapped / floor, built-in, 512, 16 threads"
  profile after builtin 512 16

  step "logits: before and after against --exact, built-in model, 128 prompt + 16"
  logits_check /tmp/builtin before after

  step "long prompts without GQA, 16 threads: 8192"
  if until_s 115; then
    profile after mha 8192 16 25
    PYTHONUNBUFFERED=1 timeout 25 python3 torch_prefill.py --model /tmp/mha --threads 16 --prompt-len 8192 --repeats 1 \
      --max-new 0 | tee "$out/torch-mha-8192.jsonl"
  fi
  if until_s 135; then profile before mha 8192 16 25; fi

  step summary
  python3 amx_table.py "$out"
  date -u
} 2>&1 | tee "$final/log.txt"
cp "$final/log.txt" "$out/"
tar -C /tmp --exclude="*.npy" -czf "$final/amx-table.tar.gz" amx-table  # the logits (18 MB each) stay behind
