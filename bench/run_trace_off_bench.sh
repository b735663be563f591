#!/usr/bin/env bash
# Does the event trace, switched off, cost anything? Builds the allocation
# benchmark at two commits (default: the one before the recorder landed, and
# HEAD) in temporary worktrees, runs them alternately, and records the
# medians side by side in bench/results/<date>-trace-off.md.
# Usage: bench/run_trace_off_bench.sh [BEFORE [AFTER]]   (ROUNDS=10 by default)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
before="${1:-d6994ad}"
after="${2:-HEAD}"
rounds="${ROUNDS:-10}"
filter='pair/nuvec/real_time/threads:1|memory_snapshot'
work="$(mktemp -d)"
trap 'git worktree remove --force "$work/before" 2>/dev/null; git worktree remove --force "$work/after" 2>/dev/null; rm -rf "$work"' EXIT
for side in before after; do
  rev="$before"; [ "$side" = after ] && rev="$after"
  git worktree add -q "$work/$side" "$rev"
  (cd "$work/$side" && cmake --preset release -DNUVEC_BUILD_TESTS=OFF >/dev/null &&
   cmake --build --preset release --target nuvec_alloc_bench >/dev/null)
done
for ((r = 0; r < rounds; r++)); do
  for side in before after; do
    "$work/$side/build/release/bench/nuvec_alloc_bench" --benchmark_filter="$filter" \
      --benchmark_format=csv 2>/dev/null | grep '^"' | sed "s/^/$side,/" >> "$work/rows.csv"
  done
done
out="bench/results/$(date +%F)-trace-off.md"
{
  echo "# The event trace, off: allocation pair and memory() before and after the recorder"
  echo
  echo "What ran: bench/alloc_bench.cc and bench/memory_bench.cc (filter \`$filter\`), built at"
  echo "$(git rev-parse --short "$before") (before the trace recorder) and $(git rev-parse --short "$after") (with it, tracing off),"
  echo "run alternately $rounds times each. Command: \`bench/run_trace_off_bench.sh $before $after\`."
  echo "Machine: $(nproc) vCPU, $({ grep -m 1 '^model name' /proc/cpuinfo || true; } | cut -d: -f2- | sed 's/^ *//'), $(uname -sr); $(date -u '+%Y-%m-%d %H:%M UTC')."
  echo
  python3 - "$work/rows.csv" <<'PY'
import csv, statistics, sys
rows = {}
for line in csv.reader(open(sys.argv[1])):
    side, name, real = line[0], line[1], float(line[3])
    rows.setdefault(name, {}).setdefault(side, []).append(real)
print("| benchmark | before (median ns) | after, trace off (median ns) | after / before |")
print("|---|---:|---:|---:|")
for name, sides in rows.items():
    b, a = statistics.median(sides["before"]), statistics.median(sides["after"])
    print(f"| {name} | {b:.1f} | {a:.1f} | {a / b:.3f} |")
PY
} > "$out"
cat "$out"
