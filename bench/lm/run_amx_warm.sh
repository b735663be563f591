#!/usr/bin/env bash
# The built-in model's prefill measured warm on both sides, on a machine with
# AMX, from the folder bench/lm/prepare_amx_carry.sh makes: `nuvec profile`
# times one cold prefill in a fresh process (the mapped weights and the
# activations are faulted in during it), PyTorch's side is the median of
# warm passes. Here nuvec_lm_runtime_bench (bench/lm_runtime: one untimed
# prefill, then the median of --repetitions) of the builds before and after
# the AMX path, alternately, two rounds, at 4 and 16 threads, and
# torch_prefill.py on the same checkpoint. Usage: bash run_amx_warm.sh
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
export LD_LIBRARY_PATH="$here/lib"
out="${OUT:-/tmp/amx-out}"
mkdir -p "$out"
{
  date -u
  ./after/nuvec demo-model /tmp/builtin > /dev/null
  for threads in 4 16; do
    for round in 1 2; do
      for build in before after; do
        ./$build/nuvec_lm_runtime_bench /tmp/builtin --prompt 512 --decode-steps 16 --repetitions 3 \
          --threads $threads > "$out/lmrt-$build-$threads-$round.json"
        python3 -c "
import json, sys; j = json.load(open(sys.argv[1]))
print(sys.argv[2], j['kernels'], j['threads'], 'prefill tok/s', round(j['prefill']['tokens_per_second']),
      'decode tok/s', round(j['decode']['tokens_per_second'], 1))" "$out/lmrt-$build-$threads-$round.json" "$build"
      done
    done
  done
  PYTHONUNBUFFERED=1 python3 torch_prefill.py --model /tmp/builtin --threads 4 16 --repeats 5
  date -u
} 2>&1 | tee "$out/warm-log.txt"
