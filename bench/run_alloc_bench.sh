#!/usr/bin/env bash
# Runs the allocation micro-benchmarks and records them in
# bench/results/<date>-alloc-pair.md (with the raw JSON alongside):
#   1. as is: nuvec against glibc malloc/free with glibc's defaults (the target);
#   2. again with glibc's heap trimming off (GLIBC_TUNABLES below), a harder
#      baseline: by default glibc returns heap memory to the system (brk) so
#      often on this trace that its cost is mostly system calls.
# Both passes: 10 repetitions, medians, randomly interleaved repetitions.
#
# Usage: bench/run_alloc_bench.sh [extra Google Benchmark flags...]
# Env:   BUILD_DIR (default build/release; built with the release preset first,
#        configuring if needed), REPETITIONS (default 10).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build/release}"
repetitions="${REPETITIONS:-10}"
binary="$build_dir/bench/nuvec_alloc_bench"
notrim_tunables="glibc.malloc.trim_threshold=4294967296:glibc.malloc.mmap_threshold=33554432"

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

flags=(--benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=true
       --benchmark_enable_random_interleaving=true --benchmark_out_format=json "$@")
commands=("$binary ${flags[*]} --benchmark_out=$(basename "$stem").json"
          "GLIBC_TUNABLES=$notrim_tunables $binary ${flags[*]} --benchmark_out=$(basename "$stem")-glibc-notrim.json")

echo "+ ${commands[0]}" >&2
"$binary" "${flags[@]}" --benchmark_out="$stem.json" >&2
echo "+ ${commands[1]}" >&2
GLIBC_TUNABLES="$notrim_tunables" "$binary" "${flags[@]}" --benchmark_out="$stem-glibc-notrim.json" >&2

load_at_end="$(cut -d' ' -f1-3 /proc/loadavg)"
compiler_path="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)"
# (First lines only; `|| true` inside, as pipefail would count head's SIGPIPE.)
compiler="$({ "${compiler_path:-c++}" --version 2>/dev/null || true; } | head -n 1)"
build_type="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo 'none')"
git status --porcelain -- src include 2>/dev/null | grep -q . && commit="$commit + uncommitted changes in src/ or include/"

MACHINE_DATE="$(date -u '+%Y-%m-%d %H:%M UTC')" \
MACHINE_NPROC="$(nproc)" \
MACHINE_CPU="$({ grep -m 1 '^model name' /proc/cpuinfo || true; } | cut -d: -f2- | sed 's/^ *//')" \
MACHINE_KERNEL="$(uname -srm)" \
MACHINE_GLIBC="$({ ldd --version 2>/dev/null || true; } | head -n 1)" \
MACHINE_COMPILER="$compiler, CMAKE_BUILD_TYPE=$build_type" \
NUVEC_COMMIT="$commit" \
LOAD_AT_END="$load_at_end" \
COMMAND_DEFAULT="${commands[0]}" COMMAND_NOTRIM="${commands[1]}" \
python3 "$root/bench/alloc_results.py" "$stem.json" "$stem-glibc-notrim.json" > "$stem.md"
cat "$stem.md"
echo "wrote ${stem#"$root"/}.md" >&2
