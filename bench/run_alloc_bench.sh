#!/usr/bin/env bash
# Runs the allocation micro-benchmarks (bench/alloc_bench.cc, memory_bench.cc)
# and records them in bench/results/<date>-alloc-pair.md, raw JSON alongside:
# four passes (run_alloc_passes.sh), each nuvec beside one malloc — glibc as
# it comes, glibc without heap trimming, jemalloc, mimalloc — on both traces
# (log-uniform 256 B-16 MiB, and the built-in transformer's sizes).
#
# Usage: bench/run_alloc_bench.sh [extra Google Benchmark flags...]
# Env:   BUILD_DIR (default build/release; built with the release preset first,
#        configuring if needed), REPETITIONS (default 10), NUVEC_BENCH_THREADS
#        (default 1,2), and those of run_alloc_passes.sh.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build/release}"
binary="$build_dir/bench/nuvec_alloc_bench"

if [[ "$build_dir" == build/release ]]; then
  [[ -f "$build_dir/CMakeCache.txt" ]] || cmake --preset release >/dev/null
  cmake --build --preset release --target nuvec_alloc_bench >/dev/null
fi
[[ -x "$binary" ]] || { echo "run_alloc_bench.sh: no $binary; build it first" >&2; exit 1; }

results="$root/bench/results"
mkdir -p "$results"
stem="$results/$(date +%F)-alloc-pair"
n=2
while [[ -e "$stem.md" ]]; do stem="$results/$(date +%F)-alloc-pair-$n"; n=$((n + 1)); done

"$root/bench/run_alloc_passes.sh" "$binary" "$stem" "$@"

compiler_path="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)"
# (First lines only; `|| true` inside, as pipefail would count head's SIGPIPE.)
compiler="$({ "${compiler_path:-c++}" --version 2>/dev/null || true; } | head -n 1)"
build_type="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo 'none')"
git status --porcelain -- src include bench 2>/dev/null | grep -q . && commit="$commit + uncommitted changes"

MACHINE_DATE="$(date -u '+%Y-%m-%d %H:%M UTC')" \
MACHINE_NPROC="$(nproc)" \
MACHINE_CPU="$({ grep -m 1 '^model name' /proc/cpuinfo || true; } | cut -d: -f2- | sed 's/^ *//')" \
MACHINE_KERNEL="$(uname -srm)" \
MACHINE_GLIBC="$({ ldd --version 2>/dev/null || true; } | head -n 1)" \
MACHINE_COMPILER="$compiler, CMAKE_BUILD_TYPE=$build_type" \
NUVEC_COMMIT="$commit" \
LOAD_AT_END="$(cut -d' ' -f1-3 /proc/loadavg)" \
COMMAND="REPETITIONS=${REPETITIONS:-10} NUVEC_BENCH_THREADS=${NUVEC_BENCH_THREADS:-1,2} bench/run_alloc_bench.sh $*" \
python3 "$root/bench/alloc_results.py" "$stem" > "$stem.md"
cat "$stem.md"
echo "wrote ${stem#"$root"/}.md" >&2
