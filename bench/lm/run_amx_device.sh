#!/usr/bin/env bash
# The AMX measurement on a machine with AMX (the H200 machine's Xeon), in one
# run, from the folder bench/lm/prepare_amx_carry.sh makes: the kernel tests
# on every instruction set the CPU has, nuvec_roofline's AMX section, then
# for the built-in model and a 1.1B shape (22 layers, hidden 2048, GQA 32/4,
# MLP 5632, vocabulary 32000, random bf16 weights from `nuvec demo-model`),
# at 4 and 16 threads, side by side: `nuvec profile` (512-token prefill, 32
# decoded) of the build before the AMX path and of the build with it, and
# PyTorch's bf16 prefill and decode on the same checkpoint
# (bench/lm/torch_prefill.py); then the logits of the two builds compared.
# nuvec's runs alternate between the builds, ROUNDS times (default 3 for the
# built-in model, 2 for the 1.1B); the table takes the medians. Writes the
# log and the table to $OUT (default /tmp/amx-out) and every raw file into
# $OUT/amx-run.tar.gz.
# Usage (in the carry folder): bash run_amx_device.sh [quick]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
export LD_LIBRARY_PATH="$here/lib"
final="${OUT:-/tmp/amx-out}"
out=/tmp/amx-run
mkdir -p "$final" "$out"
quick="${1:-}"
. ./amx_run_common.sh

{
  step machine
  machine_info

  step tests
  run_tests kernel_amx_test kernel_linear_test kernel_swiglu_test lm_attention_test lm_session_test lm_ops_test

  step roofline
  ./after/nuvec_roofline --only amx ${quick:+--quick}

  step models
  ./after/nuvec demo-model /tmp/builtin > /dev/null
  ./after/nuvec demo-model /tmp/llama1b --layers 22 --hidden 2048 --heads 32 --kv-heads 4 --intermediate 5632 \
    --vocab 32000 --context 4096 > /dev/null
  du -sh /tmp/builtin /tmp/llama1b

  for model in builtin llama1b; do
    rounds=3; [[ $model == llama1b ]] && rounds=2
    for threads in 4 16; do
      for round in $(seq $rounds); do
        for build in before after; do
          run="$build-$model-$threads-$round"
          step "$run"
          ./$build/nuvec profile /tmp/$model --prompt-len 512 --max-new 32 --threads $threads --json \
            > "$out/$run.json" 2> "$out/$run.err"
          echo "exit $?"; python3 -c "
import json,sys; p=json.load(open(sys.argv[1]))
print(p['kernels'], *[(f['phase'], round(f['tokens_per_second'],1), round(f['peak_with_mapped_over_floor'],3)) for f in p['phases']])" \
            "$out/$run.json"
        done
      done
    done
    step "torch $model"
    PYTHONUNBUFFERED=1 python3 torch_prefill.py --model /tmp/$model --threads 4 16 | tee "$out/torch-$model.jsonl"
  done
  if [[ -n "${TORCH_GEMM:-}" ]]; then
    step "torch F.linear"
    PYTHONUNBUFFERED=1 python3 torch_prefill.py --model none --gemm --threads 16 | tee "$out/torch-gemm.jsonl"
  fi

  step "logits: before (avx512bf16) and after (amx), built-in model, 128 prompt + 16"
  logits_check /tmp/builtin before after

  step summary
  python3 amx_summary.py "$out" | tee "$final/summary.md"
} 2>&1 | tee "$final/log.txt"
cp "$final/log.txt" "$out/"
tar -C /tmp -czf "$final/amx-run.tar.gz" amx-run
