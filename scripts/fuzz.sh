#!/usr/bin/env bash
# Fuzzes the checkpoint header parsers, the model config reader and the trace
# reader (every fuzz/*_fuzz.cc): installs clang and libFuzzer if
# missing, builds fuzz/ (clang, libFuzzer, ASan + UBSan, the library
# instrumented too) in build/fuzz, and runs every target on a fresh copy of
# its seed corpus (fuzz/corpus/<format>) for SECONDS each, as many at once as
# there are cores (FUZZ_JOBS overrides). Fails on any finding: a crash, a
# sanitizer report, a leak, a timeout or running out of memory; the input
# that did it is kept under build/fuzz/run/<target>/artifacts/.
# Usage: scripts/fuzz.sh [SECONDS]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
jobs=${FUZZ_JOBS:-$(nproc)}

scripts/install-deps.sh
missing=()
for p in clang libclang-rt-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "nuvec: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "== fuzz: build" >&2
CC=clang CXX=clang++ cmake -S fuzz -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j "$(nproc)"

targets=()
for source in fuzz/*_fuzz.cc; do
  target=$(basename "$source" .cc)
  if [ -x "build/fuzz/$target" ]; then
    targets+=("$target")
  else
    echo "== fuzz: $target not built (its parser is not in the library yet); skipped" >&2
  fi
done

# One target: a fresh copy of its seeds, its log, its artifacts and its
# exit status under build/fuzz/run/<target>/.
run_target() {
  local target=$1 format=${1%_fuzz}
  local dir=build/fuzz/run/$target
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp fuzz/corpus/"$format"/* "$dir/corpus/"
  local dict=()
  [ -f "fuzz/$format.dict" ] && dict=(-dict="fuzz/$format.dict")
  local rc=0
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build/fuzz/$target" "${dict[@]}" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=1048576 \
    -timeout=30 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

echo "== fuzz: ${targets[*]}, ${seconds} s each, $jobs at a time" >&2
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
  run_target "$target" &
done
wait

status=0
for target in "${targets[@]}"; do
  dir=build/fuzz/run/$target
  rc=$(cat "$dir/rc")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  time=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$dir/log" | tail -1)
  corpus=$(ls "$dir/corpus" | wc -l)
  if [ "$rc" = 0 ]; then
    echo "== fuzz: $target: no finding: ${runs:-?} executions in ${time:-?} s, corpus $(ls fuzz/corpus/"${target%_fuzz}" | wc -l) -> $corpus inputs" >&2
  else
    echo "== fuzz: $target: FINDING (exit $rc); inputs in $dir/artifacts/, log $dir/log:" >&2
    tail -n 60 "$dir/log" >&2
    status=1
  fi
done
exit $status
