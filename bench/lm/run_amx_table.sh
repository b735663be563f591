#!/usr/bin/env bash
# The AMX prefill table on a machine with AMX (the H200 machine's Xeon), in
# one run, from the folder bench/lm/prepare_amx_carry.sh makes, everything
# warm and as medians: the kernel and LM tests on every instruction set the
# CPU has; nuvec_roofline's AMX section at 16 and 4 threads (the tile unit's
# peak measured in the same run, linear() under several blockings) and
# PyTorch's F.linear on the same shapes (oneDNN's AMX GEMM); then for
# the built-in model and a 1.1B shape (22 layers, hidden 2048, GQA 32/4, MLP
# 5632, vocabulary 32000, random bf16 weights from `nuvec demo-model`), at 4
# and 16 threads: nuvec_lm_runtime_bench (one untimed prefill of 512 tokens,
# then the median of 3; 8 decode steps) of the build before (BEFORE: the
# previous AMX kernel) and after, alternately, two rounds, and PyTorch's
# bf16 prefill and decode on the same checkpoint (torch_prefill.py: one
# untimed pass, median of 5; 8 decode steps); `nuvec profile` of the after build at 16
# threads for peak_with_mapped / floor; the logits of both builds against
# --exact. Writes log.txt and amx-table.tar.gz (every raw file) to $OUT.
# Usage (in the carry folder): bash run_amx_table.sh
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
export LD_LIBRARY_PATH="$here/lib"
final="${OUT:-/tmp/amx-out}"
out=/tmp/amx-table
mkdir -p "$final" "$out"
step() { echo; echo "## $* ($(date -u +%T))"; }

{
  step machine
  date -u; uname -r; nproc
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|L1d|L2|L3|MHz' || true
  grep -o -w -E 'amx_(bf16|tile|int8)|avx512_bf16' /proc/cpuinfo | sort | uniq -c
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'

  step tests
  for t in kernel_amx_test kernel_linear_test kernel_swiglu_test lm_attention_test lm_session_test lm_ops_test; do
    ./tests/$t --gtest_brief=1 > "$out/test-$t.txt" 2>&1; echo "$t: exit $? ($(grep -E 'PASSED|FAILED|SKIPPED' "$out/test-$t.txt" | tr '\n' ' '))"
  done
  grep -B2 -A8 Failure "$out"/test-*.txt | head -60

  step "roofline, 16 threads"
  ./after/nuvec_roofline --only amx --threads 16
  step "roofline, 4 threads"
  ./after/nuvec_roofline --only amx --threads 4 --quick

  step "torch F.linear bf16 (oneDNN inside PyTorch), 16 and 4 threads"
  PYTHONUNBUFFERED=1 python3 torch_prefill.py --model none --gemm --threads 16 4 | tee "$out/torch-gemm.jsonl"

  step models
  ./after/nuvec demo-model /tmp/builtin > /dev/null
  ./after/nuvec demo-model /tmp/llama1b --layers 22 --hidden 2048 --heads 32 --kv-heads 4 --intermediate 5632 \
    --vocab 32000 --context 4096 > /dev/null
  du -sh /tmp/builtin /tmp/llama1b

  for model in builtin llama1b; do
    for threads in 4 16; do
      for round in 1 2; do
        for build in before after; do
          run="lmrt-$build-$model-$threads-$round"
          ./$build/nuvec_lm_runtime_bench /tmp/$model --prompt 512 --decode-steps 8 --repetitions 3 \
            --threads $threads > "$out/$run.json" 2> "$out/$run.err"
          python3 -c "
import json, sys; j = json.load(open(sys.argv[1]))
print(sys.argv[2], j['kernels'], j['threads'], 'prefill tok/s', round(j['prefill']['tokens_per_second']),
      'decode tok/s', round(j['decode']['tokens_per_second'], 1))" "$out/$run.json" "$run"
        done
      done
    done
    step "torch $model"
    PYTHONUNBUFFERED=1 python3 torch_prefill.py --model /tmp/$model --threads 4 16 --repeats 5 --max-new 8 | tee "$out/torch-$model.jsonl"
    step "profile $model"
    ./after/nuvec profile /tmp/$model --prompt-len 512 --max-new 16 --threads 16 --json > "$out/profile-$model.json"
    python3 -c "
import json,sys; p=json.load(open(sys.argv[1]))
print(p['kernels'], *[(f['phase'], round(f['tokens_per_second'],1), round(f['peak_with_mapped_over_floor'],3)) for f in p['phases']])" \
      "$out/profile-$model.json"
  done

  step "logits: before and after against --exact, built-in model, 128 prompt + 16"
  for build in before after; do
    ./$build/nuvec run /tmp/builtin --prompt-len 128 --max-new 16 --dump-logits "$out/logits-$build.npy" \
      > "$out/tokens-$build.txt" 2>/dev/null
  done
  ./after/nuvec run /tmp/builtin --prompt-len 128 --max-new 16 --exact --dump-logits "$out/logits-exact.npy" \
    > "$out/tokens-exact.txt" 2>/dev/null
  python3 -c "
import numpy as np, sys
d = sys.argv[1]
b, a, e = (np.load(f'{d}/logits-{n}.npy') for n in ('before', 'after', 'exact'))
spread = e.std()
for name, x, y in (('after vs before', a, b), ('after vs exact', a, e), ('before vs exact', b, e)):
    print(f'{name}: max |diff| {np.abs(x - y).max():.3g} ({np.abs(x - y).max() / spread:.3g} of the logits std), '
          f'top-1 agree {np.mean(x.argmax(1) == y.argmax(1)):.4f}')
for n in ('before', 'after', 'exact'): print(n, open(f'{d}/tokens-{n}.txt').read().strip())
" "$out"

  step summary
  python3 amx_table.py "$out"
  date -u
} 2>&1 | tee "$final/log.txt"
cp "$final/log.txt" "$out/"
tar -C /tmp -czf "$final/amx-table.tar.gz" amx-table
