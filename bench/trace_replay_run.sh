#!/usr/bin/env bash
# Replays real allocation traces on nuvec (CPU) and on glibc malloc in the
# same process (`nuvec replay --against malloc --json`), R times each, and
# records fragmentation overhead, system allocations, misses and time per
# operation in bench/results/<date>-trace-replay.md (medians over the runs;
# the per-run JSON goes alongside as .json).
# Usage: bench/trace_replay_run.sh [--repetitions R] [TRACE...]
#   TRACE defaults to traces/*.jsonl.gz; .gz files are decompressed first.
# Env: BUILD_DIR (default build/release, built with the release preset first;
#      another directory must hold a built tools/nuvec).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/machine_rows.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
repetitions=5
traces=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repetitions) repetitions="$2"; shift 2 ;;
    *) traces+=("$1"); shift ;;
  esac
done
[[ ${#traces[@]} -gt 0 ]] || traces=(traces/*.jsonl.gz)

build_dir="${BUILD_DIR:-build/release}"
if [[ "$build_dir" == build/release ]]; then
  [[ -f build/release/CMakeCache.txt ]] || cmake --preset release >/dev/null
  cmake --build --preset release --target nuvec_tool >/dev/null
fi
binary="$build_dir/tools/nuvec"
[[ -x "$binary" ]] || { echo "trace_replay_run.sh: no $binary; build it first" >&2; exit 1; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

out="bench/results/$(date +%F)-trace-replay.md"
n=2
while [[ -e "$out" ]]; do out="bench/results/$(date +%F)-trace-replay-$n.md"; n=$((n + 1)); done
runs="${out%.md}.json"

echo "[" > "$runs"
first=1
for trace in "${traces[@]}"; do
  input="$trace"
  if [[ "$trace" == *.gz ]]; then
    input="$scratch/$(basename "${trace%.gz}")"
    gzip -dc "$trace" > "$input"
  fi
  for ((r = 0; r < repetitions; r++)); do
    [[ $first -eq 1 ]] || echo "," >> "$runs"
    first=0
    "$binary" replay "$input" --against malloc --json | python3 -c \
      'import json,sys; d=json.load(sys.stdin); d["trace"]=sys.argv[1]; print(json.dumps(d))' "$trace" >> "$runs"
  done
done
echo "]" >> "$runs"

table="$(python3 - "$runs" <<'EOF'
import json, statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for run in json.load(open(sys.argv[1])):
    runs[run["trace"]].append(run)
def mib(b): return f"{b / 2**20:,.1f} MiB"
print("| trace | peak live | nuvec peak held | malloc peak held | nuvec frag. | malloc frag. "
      "| nuvec sys. allocs | nuvec misses | distinct live sizes at peak | nuvec ns/op | malloc ns/op "
      "| nuvec/malloc time |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for trace, rs in runs.items():
    n, m = rs[0]["nuvec"], rs[0]["malloc"]
    med = lambda f: statistics.median(f(r) for r in rs)
    print(f"| `{trace}` | {mib(n['peak_live'])} | {mib(n['peak_held'])} | {mib(m['peak_held'])} "
          f"| {n['fragmentation']:.3f} | {m['fragmentation']:.3f} | {n['system_allocations']} "
          f"| {n['misses']} | {n['distinct_sizes_at_peak_live']} | {med(lambda r: r['nuvec']['ns_per_op']):.0f} "
          f"| {med(lambda r: r['malloc']['ns_per_op']):.0f} "
          f"| {med(lambda r: r['nuvec']['ns_per_op'] / r['malloc']['ns_per_op']):.2f} |")
EOF
)"

{
  echo "# Trace replay: nuvec (CPU) against glibc malloc"
  echo
  echo "What ran: \`nuvec replay TRACE --against malloc --json\`, $repetitions times per trace; both"
  echo "allocators replay the same allocate/free sequence in one process (malloc first). Peak held:"
  echo "nuvec's active + cache at its highest; glibc's mallinfo2 arena + hblkhd at its highest"
  echo "(less its value before the replay), sampled after every operation. Fragmentation: peak held /"
  echo "peak live (requested bytes). Memory figures are deterministic; times are medians over the"
  echo "runs, each operation timed alone (about one clock read included). System allocations: on"
  echo "the CPU, address-space reservations; misses: allocations the cache did not serve (taken from"
  echo "fresh or decommitted address space, or a new reservation). Per-run JSON: $(basename "$runs")."
  command_and_machine_rows "${BUILD_DIR:+BUILD_DIR=$BUILD_DIR }bench/trace_replay_run.sh --repetitions $repetitions ${traces[*]}"
  echo "| glibc | $(ldd --version | head -1) |"
  commit="$(git rev-parse --short HEAD)"
  git status --porcelain -- src include 2>/dev/null | grep -q . && commit="$commit + uncommitted changes in src/ or include/"
  echo "| nuvec commit | $commit |"
  echo
  echo "$table"
} > "$out"
cat "$out"
echo "wrote $out and $runs" >&2
