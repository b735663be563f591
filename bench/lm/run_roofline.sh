#!/usr/bin/env bash
# Runs nuvec_roofline (bench/lm/roofline.cc) and records it in
# bench/results/<date>-lm-kernels.md with the command, the machine and the
# date. The machine is shared: before running, it waits (up to 20 minutes,
# or NUVEC_IDLE_TRIES x 2 s) until the CPUs were at least 90% idle for 2 s,
# and the record says whether they were; nuvec_roofline itself prints how
# much CPU time other processes took during each section. Figures taken
# while other work ran are not comparable.
# Usage: bench/lm/run_roofline.sh [nuvec_roofline options...]
#   NUVEC_BUILD_DIR=build/x bench/lm/run_roofline.sh  builds and runs in a Release
#   build directory other than the release preset's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../machine_rows.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
build="${NUVEC_BUILD_DIR:-build/release}"
if [[ -z "${NUVEC_BUILD_DIR:-}" ]]; then
  [[ -f build/release/CMakeCache.txt ]] || cmake --preset release >/dev/null
  cmake --build --preset release --target nuvec_roofline >/dev/null
else
  cmake --build "$build" --target nuvec_roofline >/dev/null
fi
binary="$build/bench/nuvec_roofline"
out="bench/results/$(date +%F)-lm-kernels.md"
n=2
while [[ -e "$out" ]]; do out="bench/results/$(date +%F)-lm-kernels-$n.md"; n=$((n + 1)); done

# Percent of CPU time idle over 2 s, from /proc/stat.
idle_percent() {
  local a b
  read -r -a a < /proc/stat; sleep 2; read -r -a b < /proc/stat
  local total=0 i
  for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
  echo $(( 100 * (b[4] - a[4]) / (total > 0 ? total : 1) ))
}
idle=0
for _ in $(seq "${NUVEC_IDLE_TRIES:-600}"); do
  idle=$(idle_percent)
  (( idle >= 90 )) && break
done

command="$binary --scratch build $*"
result="$("$binary" --scratch build "$@")"
{
  echo "# LM kernels against the machine's roofline"
  echo
  echo "What ran: bench/lm/roofline.cc, one process: read bandwidth (streaming sum over 1 GiB),"
  echo "decode-shaped linear() (m = 1) over ~768 MiB of weights, prefill-shaped linear() (m = 512)"
  echo "against OpenBLAS and the kernel's own ceiling. Medians; see the source for the method."
  command_and_machine_rows "$command"
  thp_row
  echo "| CPUs idle before the run | ${idle}% (over 2 s) |"
  echo "| nuvec commit | $(git rev-parse --short HEAD) (plus uncommitted changes: $(git status --porcelain | wc -l) files) |"
  echo
  echo "$result"
} > "$out"
cat "$out"
echo "wrote $out" >&2
