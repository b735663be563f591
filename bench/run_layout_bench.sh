#!/usr/bin/env bash
# Runs the safetensors layout benchmark (bench/safetensors_layout_bench.cc):
# the reference layout nuvec writes against 256- and 4096-byte padding, and
# records it in bench/results/<date>-safetensors-layout.md with the command,
# the machine and the date. The checkpoints (~420 MiB each at 2 layers) stay
# in build/bench-data.
# Usage: bench/run_layout_bench.sh [--layers N] [--repetitions R]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/machine_rows.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[[ -f build/release/CMakeCache.txt ]] || cmake --preset release >/dev/null
cmake --build --preset release --target nuvec_safetensors_layout_bench >/dev/null
binary=build/release/bench/nuvec_safetensors_layout_bench
out="bench/results/$(date +%F)-safetensors-layout.md"
n=2
while [[ -e "$out" ]]; do out="bench/results/$(date +%F)-safetensors-layout-$n.md"; n=$((n + 1)); done
command="$binary $*"
load="$(cut -d' ' -f1-3 /proc/loadavg)"
result="$("$binary" "$@")"
{
  echo "# safetensors layout: does padding tensors to 256 or 4096 bytes change load time?"
  echo
  echo "What ran: bench/safetensors_layout_bench.cc on a generated Llama-shaped bf16 checkpoint"
  echo "(bench/llama_checkpoint.cc) in three layouts: the reference layout save_safetensors writes,"
  echo "nuvec's old 256-byte padding, and 4096-byte padding. Each file flushed, dropped from the"
  echo "page cache and read back once, so all are cached alike; then map + parse, load + read every"
  echo "byte, load + copy through a 4 MiB staging slot, a fresh device each time, the order rotating"
  echo "per repetition; medians and ratios to the reference layout."
  command_and_machine_rows "$command"
  thp_row
  echo "| load average at the start (1, 5, 15 min; shared machine) | $load |"
  echo "| nuvec commit | $(git rev-parse --short HEAD) |"
  echo
  echo "$result"
} > "$out"
cat "$out"
echo "wrote $out" >&2
