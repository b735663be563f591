#!/usr/bin/env bash
# The LM runtime's benchmarks on the built-in model (nuvec demo-model), recorded
# in bench/results/<date>-lm-runtime.md (+ .json with every raw figure):
#   memory: `nuvec profile --json` at prompt 512 and 8192 (each phase in a
#           fresh process): peak_with_mapped / floor, zero system allocations
#           in steady decode, private memory added by loading, VmHWM;
#   speed:  nuvec_lm_runtime_bench: decode vs the read-bandwidth bound,
#           prefill (512) vs linear()'s GEMM rate, measured in the same run.
# Usage: bench/lm_runtime/run_lm_runtime_bench.sh [repetitions]   (BUILD_DIR, default build/release)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
build=${BUILD_DIR:-build/release}
repetitions=${1:-5}
[[ -f $build/CMakeCache.txt ]] || cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target nuvec_tool nuvec_lm_runtime_bench >/dev/null
nuvec=$build/tools/nuvec
bench=$build/bench/nuvec_lm_runtime_bench
model=build/bench-data/demo-model
[[ -f $model/config.json ]] || "$nuvec" demo-model "$model" >&2

out="bench/results/$(date +%F)-lm-runtime"
n=2
while [[ -e "$out.md" ]]; do out="bench/results/$(date +%F)-lm-runtime-$n"; n=$((n + 1)); done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
"$nuvec" profile "$model" --prompt-len 512 --max-new 128 --json > "$tmp/profile-512.json"
"$nuvec" profile "$model" --prompt-len 8192 --max-new 128 --json > "$tmp/profile-8192.json"
"$bench" "$model" --repetitions "$repetitions" > "$tmp/speed.json"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

python3 bench/lm_runtime/lm_results.py "$tmp/profile-512.json" "$tmp/profile-8192.json" "$tmp/speed.json" \
  --json "$out.json" --machine "$(grep -m 1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, $(uname -sr)" \
  --commit "$(git rev-parse --short HEAD)" --load "$load_start -> $load_end" \
  --commands "$nuvec profile $model --prompt-len 512 --max-new 128 --json" \
             "$nuvec profile $model --prompt-len 8192 --max-new 128 --json" \
             "$bench $model --repetitions $repetitions" > "$out.md"
cat "$out.md"
echo "wrote $out.md and $out.json" >&2
