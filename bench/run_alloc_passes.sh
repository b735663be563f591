#!/usr/bin/env bash
# Runs nuvec_alloc_bench once per malloc beside nuvec, each pass into
# STEM-<pass>.json: glibc as it comes, glibc without heap trimming
# (GLIBC_TUNABLES below), jemalloc and mimalloc (preloaded, so that the
# benchmark's `malloc` rows are theirs; nuvec's rows run in every pass).
# Needs nothing but the binary and the libraries, so it runs on a machine
# without a build (run_alloc_bench.sh calls it here).
#
# Usage: bench/run_alloc_passes.sh BINARY STEM [extra Google Benchmark flags...]
# Env:   REPETITIONS (default 10), NUVEC_BENCH_THREADS (default 1,2),
#        JEMALLOC_LIB, MIMALLOC_LIB (default: Debian's, libjemalloc2 / libmimalloc2.0),
#        PASSES (default "glibc glibc-notrim jemalloc mimalloc").
set -euo pipefail
binary="$1" stem="$2"
shift 2
repetitions="${REPETITIONS:-10}"
jemalloc="${JEMALLOC_LIB:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}"
mimalloc="${MIMALLOC_LIB:-/usr/lib/x86_64-linux-gnu/libmimalloc.so.2}"
notrim="glibc.malloc.trim_threshold=4294967296:glibc.malloc.mmap_threshold=33554432"
flags=(--benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=true
       --benchmark_enable_random_interleaving=true --benchmark_out_format=json "$@")
for pass in ${PASSES:-glibc glibc-notrim jemalloc mimalloc}; do
  case "$pass" in
    glibc) env=() ;;
    glibc-notrim) env=("GLIBC_TUNABLES=$notrim") ;;
    jemalloc) env=("LD_PRELOAD=$jemalloc") ;;
    mimalloc) env=("LD_PRELOAD=$mimalloc") ;;
    *) echo "run_alloc_passes.sh: unknown pass '$pass' (glibc, glibc-notrim, jemalloc, mimalloc)" >&2; exit 2 ;;
  esac
  for lib in "${env[@]}"; do
    [[ "$lib" != LD_PRELOAD=* || -f "${lib#LD_PRELOAD=}" ]] || { echo "run_alloc_passes.sh: no ${lib#LD_PRELOAD=} (apt-get install libjemalloc-dev libmimalloc-dev)" >&2; exit 1; }
  done
  echo "+ ${env[*]} $binary ${flags[*]} --benchmark_out=$(basename "$stem")-$pass.json" >&2
  env "${env[@]}" "$binary" "${flags[@]}" --benchmark_out="$stem-$pass.json" >&2
done
