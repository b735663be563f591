#!/usr/bin/env bash
# Runs the checkpoint load scenario (bench/checkpoint_load_bench.cc) and
# records it in bench/results/<date>-checkpoint-load.md with the command,
# the machine and the date. The generated checkpoints (~1.6 GiB each) are
# kept in build/bench-data for the next run.
# Usage: bench/run_checkpoint_bench.sh [--layers N] [--repetitions R]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/machine_rows.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[[ -f build/release/CMakeCache.txt ]] || cmake --preset release >/dev/null
cmake --build --preset release --target nuvec_checkpoint_load_bench >/dev/null
binary=build/release/bench/nuvec_checkpoint_load_bench
out="bench/results/$(date +%F)-checkpoint-load.md"
n=2
while [[ -e "$out" ]]; do out="bench/results/$(date +%F)-checkpoint-load-$n.md"; n=$((n + 1)); done
command="$binary $*"
result="$("$binary" "$@")"
{
  echo "# Checkpoint load: time to ready and private memory"
  echo
  echo "What ran: bench/checkpoint_load_bench.cc on a generated Llama-shaped bf16 checkpoint"
  echo "(bench/llama_checkpoint.cc), written twice: aligned by save_safetensors, and unaligned"
  echo "as MLX writes it. Page cache warm. Each pair runs side by side, alternating which goes"
  echo "first; medians. Private memory is RssAnon while the loaded checkpoint is alive."
  command_and_machine_rows "$command"
  thp_row
  echo "| nuvec commit | $(git rev-parse --short HEAD) |"
  echo
  echo "$result"
} > "$out"
cat "$out"
echo "wrote $out" >&2
