#!/usr/bin/env bash
# The LM runtime on a GPU machine: its tests (each kernel against the CPU
# path, the GPU session against the CPU Session), then `nuvec profile
# --device cuda` on a random bf16 checkpoint of the 1.1B shape (TinyLlama's:
# hidden 2048, 22 layers, 32/4 heads, vocabulary 32000) written there by
# `nuvec demo-model` (MODEL_DIR, default /tmp/nuvec-random-1.1b-bf16) at
# prompt 512 and 128 new tokens, and `nuvec run --device cuda` on it; then
# the test program under compute-sanitizer's memcheck, and its attention
# and RMSNorm tests (the kernels that share memory between threads) under
# racecheck. Runs from the repository root
# with the folder bench/cuda/prepare_lm_cuda_carry.sh made (CARRY, default
# build/lm-cuda-carry; prepare_carry.sh's build/cuda-carry holds it too). Each step's log goes to $OUT (default
# /tmp/nuvec-lm-cuda-out) and its tail is printed; the exit status is 1 if
# any step failed. A step that runs past STEP_TIMEOUT (default 300 s) fails.
# Steps: tests, model, profile, run, memcheck, racecheck.
# Usage: [SKIP="step ..."] bench/cuda/run_lm_cuda_h200.sh
set -uo pipefail
carry="${CARRY:-build/lm-cuda-carry}"
out="${OUT:-/tmp/nuvec-lm-cuda-out}"
mkdir -p "$out"
# Where prepare_lm_cuda_carry.sh puts it, or prepare_carry.sh's folder.
program="$carry/nuvec_lm_cuda_tests"
[[ -x "$program" ]] || program="$carry/tests/lm_cuda/nuvec_lm_cuda_tests"
nuvec="$carry/nuvec"
model="${MODEL_DIR:-/tmp/nuvec-random-1.1b-bf16}"
# The session test's quantized fixture, in this copy of the tree.
export NUVEC_GGUF_FIXTURES="$PWD/tests/lm/gguf/fixtures"
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
if [[ -x "$nuvec" ]]; then
  step model "$nuvec" demo-model "$model" --dtype bf16 --vocab 32000 --hidden 2048 --intermediate 5632 --layers 22 \
    --heads 32 --kv-heads 4 --context 2048
  TAIL=40 step profile "$nuvec" profile "$model" --device cuda --prompt-len 512 --max-new 128 --quiet
  TAIL=6 step run "$nuvec" run "$model" --device cuda --prompt-len 512 --max-new 64 --json
else
  echo "=== no $nuvec in the carry: model, profile and run skipped"
fi
step memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$program"
step racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$program" \
  --gtest_filter='*GpuAttention*:*RmsNorm*'
if ((${#failures[@]})); then echo "=== failed: ${failures[*]}"; exit 1; fi
echo "=== all passed"
