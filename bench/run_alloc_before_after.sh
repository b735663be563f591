#!/usr/bin/env bash
# The hot path before and after a change, in one call: two prebuilt
# nuvec_alloc_bench binaries run through run_alloc_passes.sh (every malloc
# pass, nuvec beside it) in alternating rounds — before first in odd rounds,
# after first in even ones — so that a machine's drift falls on both alike.
# Then, per side, the usual record (alloc_results.py: nuvec against glibc at
# 1 thread, scaling against its targets) from the last round, and one table
# of nuvec before/after (alloc_before_after.py: medians over the rounds).
# Needs no build: only the binaries and their libraries, so a machine
# without the toolchain runs it.
#
# Usage: bench/run_alloc_before_after.sh BEFORE_BINARY AFTER_BINARY OUT_DIR [Google Benchmark flags...]
# Env:   ROUNDS (default 2), REPETITIONS (default 5), NUVEC_BENCH_THREADS
#        (default 1,2), PASSES (default: glibc and glibc-notrim, plus jemalloc
#        and mimalloc where their libraries are found), LIB_DIR (prepended to
#        LD_LIBRARY_PATH: libraries the binaries need that the machine
#        lacks; default: a lib/ folder beside BEFORE_BINARY's folder, if any;
#        jemalloc and mimalloc are taken from there too when present),
#        BEFORE_LABEL, AFTER_LABEL (what the records call each side, e.g. a
#        commit; default: the binaries' paths).
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
before="$(realpath "$1")" after="$(realpath "$2")" out="$3"
shift 3
mkdir -p "$out"
lib_dir="${LIB_DIR:-$(dirname "$(dirname "$before")")/lib}"
if [[ -d "$lib_dir" ]]; then
  export LD_LIBRARY_PATH="$(realpath "$lib_dir")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [[ -f "$lib_dir/libjemalloc.so.2" ]] && export JEMALLOC_LIB="${JEMALLOC_LIB:-$(realpath "$lib_dir/libjemalloc.so.2")}"
  [[ -f "$lib_dir/libmimalloc.so.2" ]] && export MIMALLOC_LIB="${MIMALLOC_LIB:-$(realpath "$lib_dir/libmimalloc.so.2")}"
fi
for binary in "$before" "$after"; do
  "$binary" --benchmark_list_tests >/dev/null || { echo "run_alloc_before_after.sh: $binary does not run here" >&2; exit 1; }
done
if [[ -z "${PASSES:-}" ]]; then
  PASSES="glibc glibc-notrim"
  [[ -f "${JEMALLOC_LIB:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}" ]] && PASSES+=" jemalloc"
  [[ -f "${MIMALLOC_LIB:-/usr/lib/x86_64-linux-gnu/libmimalloc.so.2}" ]] && PASSES+=" mimalloc"
fi
export PASSES REPETITIONS="${REPETITIONS:-5}" NUVEC_BENCH_THREADS="${NUVEC_BENCH_THREADS:-1,2}"
rounds="${ROUNDS:-2}"
echo "run_alloc_before_after.sh: $rounds rounds, passes: $PASSES, threads: $NUVEC_BENCH_THREADS, repetitions: $REPETITIONS" >&2
for ((round = 1; round <= rounds; round++)); do
  order=(before after)
  ((round % 2 == 0)) && order=(after before)
  for side in "${order[@]}"; do
    binary="$before"
    [[ "$side" == after ]] && binary="$after"
    echo "== round $round: $side" >&2
    "$here/run_alloc_passes.sh" "$binary" "$out/$side-r$round" "$@"
  done
done

machine_env() {
  env MACHINE_DATE="$(date -u '+%Y-%m-%d %H:%M UTC')" MACHINE_NPROC="$(nproc)" \
    MACHINE_CPU="$({ grep -m 1 '^model name' /proc/cpuinfo || true; } | cut -d: -f2- | sed 's/^ *//')" \
    MACHINE_KERNEL="$(uname -srm)" MACHINE_GLIBC="$({ ldd --version 2>/dev/null || true; } | head -n 1)" \
    LOAD_AT_END="$(cut -d' ' -f1-3 /proc/loadavg)" "$@"
}
for side in before after; do
  label="${BEFORE_LABEL:-$before}"
  [[ "$side" == after ]] && label="${AFTER_LABEL:-$after}"
  machine_env NUVEC_COMMIT="$side: $label" \
    COMMAND="ROUNDS=$rounds REPETITIONS=$REPETITIONS NUVEC_BENCH_THREADS=$NUVEC_BENCH_THREADS bench/run_alloc_before_after.sh BEFORE AFTER OUT (round $rounds, $side)" \
    python3 "$here/alloc_results.py" "$out/$side-r$rounds" > "$out/$side.md"
done
python3 "$here/alloc_before_after.py" "$out" | tee "$out/before-after.md"
echo "wrote $out/before.md, $out/after.md, $out/before-after.md" >&2
