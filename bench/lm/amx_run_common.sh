# The steps bench/lm/run_amx_device.sh and run_amx_table.sh share, sourced by
# both from the folder bench/lm/prepare_amx_carry.sh makes (the scripts cd
# there first): step headers, the machine's description, the tests on every
# instruction set the CPU has, and the logits of the builds against --exact.
# Each writes its raw files into $out.

step() { echo; echo "## $* ($(date -u +%T))"; }

machine_info() {
  date -u; uname -r; nproc
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|L1d|L2|L3|MHz' || true
  grep -o -w -E 'amx_(bf16|tile|int8)|avx512_bf16' /proc/cpuinfo | sort | uniq -c
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
}

# run_tests TEST...: each test program of tests/, its summary line, and the
# first failures in full.
run_tests() {
  local t
  for t in "$@"; do
    timeout 120 ./tests/$t --gtest_brief=1 > "$out/test-$t.txt" 2>&1
    echo "$t: exit $? ($(grep -E 'PASSED|FAILED|SKIPPED' "$out/test-$t.txt" | tr '\n' ' '))"
  done
  grep -B2 -A8 Failure "$out"/test-*.txt | head -60
}

# logits_check MODEL BUILD...: 128 prompt tokens + 16 greedy steps of each
# build, and of the last one with --exact; every pair's largest difference
# against the spread of the exact logits, and the tokens.
logits_check() {
  local model="$1" build
  shift
  for build in "$@"; do
    ./$build/nuvec run "$model" --prompt-len 128 --max-new 16 --dump-logits "$out/logits-$build.npy" \
      > "$out/tokens-$build.txt" 2>/dev/null
  done
  ./${!#}/nuvec run "$model" --prompt-len 128 --max-new 16 --exact --dump-logits "$out/logits-exact.npy" \
    > "$out/tokens-exact.txt" 2>/dev/null
  python3 -c "
import numpy as np, sys
d, names = sys.argv[1], sys.argv[2:] + ['exact']
logits = {n: np.load(f'{d}/logits-{n}.npy') for n in names}
spread = logits['exact'].std()
for i, a in enumerate(names):
    for b in names[i + 1:]:
        x, y = logits[a], logits[b]
        print(f'{a} vs {b}: max |diff| {np.abs(x - y).max():.3g} ({np.abs(x - y).max() / spread:.3g} of the logits std), '
              f'top-1 agree {np.mean(x.argmax(1) == y.argmax(1)):.4f}')
for n in names: print(n, open(f'{d}/tokens-{n}.txt').read().strip())
" "$out" "$@"
}
