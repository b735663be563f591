#!/usr/bin/env bash
# The LM runtime's GPU kernels on a GPU machine: their tests (each kernel
# against the CPU path), then the same program under compute-sanitizer's
# memcheck, and its attention and RMSNorm tests (the kernels that share
# memory between threads) under racecheck. Runs from the repository root
# with the folder bench/cuda/prepare_lm_cuda_carry.sh made (CARRY, default
# build/lm-cuda-carry; prepare_carry.sh's build/cuda-carry holds it too). Each step's log goes to $OUT (default
# /tmp/nuvec-lm-cuda-out) and its tail is printed; the exit status is 1 if
# any step failed. A step that runs past STEP_TIMEOUT (default 300 s) fails.
# Usage: [SKIP="step ..."] bench/cuda/run_lm_cuda_h200.sh
set -uo pipefail
carry="${CARRY:-build/lm-cuda-carry}"
out="${OUT:-/tmp/nuvec-lm-cuda-out}"
mkdir -p "$out"
# Where prepare_lm_cuda_carry.sh puts it, or prepare_carry.sh's folder.
program="$carry/nuvec_lm_cuda_tests"
[[ -x "$program" ]] || program="$carry/tests/lm_cuda/nuvec_lm_cuda_tests"
# cuBLASLt is the machine's: the toolkit's, else the copy PyTorch's wheels brought.
libs="$PWD/$carry/lib"
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  found="$(find -H "$dir" -maxdepth 4 -name 'libcublasLt.so.13' 2>/dev/null | head -n 1)"
  if [[ -n "$found" ]]; then libs="$libs:$(dirname "$found")"; break; fi
done
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "=== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "=== libraries: $LD_LIBRARY_PATH"; ldd "$program" | grep -E "cublas|not found"
failures=()
step() {  # step NAME COMMAND...: runs, logs to $out/NAME.log, remembers a failure
  local name="$1"; shift
  if [[ " ${SKIP:-} " == *" $name "* ]]; then echo "=== $name: skipped (SKIP)"; return; fi
  echo "=== $name: $*"
  local start=$SECONDS
  timeout "${STEP_TIMEOUT:-300}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  grep -E "FAILED|Failure|bound|ERROR SUMMARY|RACECHECK SUMMARY" "$out/$name.log" | head -n 40
  tail -n "${TAIL:-4}" "$out/$name.log"
  echo "=== $name: exit $rc in $((SECONDS - start)) s"
  [[ $rc -eq 0 ]] || failures+=("$name")
}
step tests "$program"
step memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$program"
step racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$program" \
  --gtest_filter='*GpuAttention*:*RmsNorm*'
if ((${#failures[@]})); then echo "=== failed: ${failures[*]}"; exit 1; fi
echo "=== all passed"
