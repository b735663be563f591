#!/usr/bin/env bash
# One GPU session: the CUDA tests (the contract suite on cuda0, devices,
# streams under compute-sanitizer, uploads, two GPUs where there are two,
# PyTorch generate on nuvec, the Python module's GPU tests), then the benchmarks (cudaMalloc's real
# granularity, allocate+free pairs against PyTorch / cudaMallocAsync /
# cudaMalloc, checkpoint uploads against safetensors, trace replays against
# PyTorch and cudaMallocAsync, a 1.1 B-parameter Llama on nuvec against
# PyTorch's allocator). Runs from the
# repository root on a GPU machine that lacks nuvec's build dependencies,
# with the folder bench/cuda/prepare_carry.sh made (CARRY, default
# build/cuda-carry). Each step's log, and the JSON results, end up in
# $OUT/gpu-logs.tar.gz (default OUT: /tmp/nuvec-gpu-out); each step's tail
# is printed. A step that runs past STEP_TIMEOUT (default 240 s) fails.
# LLAMA_ARGS adds options to the Llama benchmark; LLAMA_TRACE=1 also records
# nuvec's trace of one Llama process ($OUT/llama_nuvec.jsonl.gz) if the
# session is younger than TRACE_BEFORE_S (default 420 s) by then.
# Usage: [SKIP="step ..."] bench/cuda/run_h200.sh [tests|bench|all]
set -uo pipefail
what="${1:-all}"
carry="${CARRY:-build/cuda-carry}"
final="${OUT:-/tmp/nuvec-gpu-out}"
out="$(mktemp -d)/gpu-logs"
mkdir -p "$out" "$final"
export LD_LIBRARY_PATH="$PWD/$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
# `import nuvec` (nuvec.torch installs the allocator plugin): built below into $carry/site.
export PYTHONPATH="$PWD/$carry/site${PYTHONPATH:+:$PYTHONPATH}"
failures=()
step() {  # step NAME COMMAND...: runs, logs to $out/NAME.log, remembers a failure
  local name="$1"; shift
  if [[ " ${SKIP:-} " == *" $name "* ]]; then echo "=== $name: skipped (SKIP)"; return; fi
  echo "=== $name: $*"
  local start=$SECONDS
  timeout "${STEP_TIMEOUT:-240}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  tail -n "${TAIL:-15}" "$out/$name.log"
  echo "=== $name: exit $rc in $((SECONDS - start)) s"
  [[ $rc -eq 0 ]] || failures+=("$name")
}

echo "=== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
uname -r; nproc; g++ --version | head -1; python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
# The module for this machine's python3: carried, built beforehand where the
# build dependencies are (build_module_on_gpu.sh with PYTHON and
# PYBIND11_INCLUDES for this python; it has no pybind11 here), else built here.
if ls "$carry"/site/nuvec/_nuvec.*.so >/dev/null 2>&1; then
  echo "=== python_module: carried ($(ls "$carry"/site/nuvec/_nuvec.*.so))"
else
  TAIL=3 step python_module "$carry/build_module_on_gpu.sh"
fi

if [[ "$what" == tests || "$what" == all ]]; then
  step contract "$carry/tests/contract_test" --gtest_filter='*cuda0*'
  step device "$carry/tests/cuda/cuda_device_test"
  step stream "$carry/tests/cuda/cuda_stream_test"
  step upload "$carry/tests/cuda/cuda_upload_test"
  step plan "$carry/tests/cuda/cuda_upload_plan_test"
  step file_sources "$carry/tests/cuda/cuda_file_sources_test"
  step multi_gpu "$carry/tests/cuda/cuda_multi_gpu_test"
  step arena_commit "$carry/tests/cuda/cuda_arena_commit_test"
  TAIL=6 step memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$carry/tests/cuda/cuda_stream_test"
  TAIL=6 step racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$carry/tests/cuda/cuda_stream_test"
  TAIL=30 step torch_llama python3 tests/cuda/torch_llama_test.py --json "$out/torch_llama.json"
  # The Python module's GPU tests: nuvec.torch's allocator, load_file to the
  # GPU, and `python3 -m nuvec.profile --device cuda` on a tiny Llama.
  TAIL=6 step pytest python3 -m pytest -q -p no:cacheprovider python/tests/test_torch_cuda.py \
    python/tests/test_torch.py python/tests/test_profile.py
fi
if [[ "$what" == bench || "$what" == all ]]; then
  TAIL=20 step granularity "$carry/bench/cuda/nuvec_cuda_granularity"
  step build_pair env BUILD_DIR="$PWD/$carry" bench/cuda/build_pair_bench.sh /tmp/pair_bench
  [[ -x /tmp/pair_bench ]] && TAIL=20 step pair /tmp/pair_bench --json "$out/pair.json"
  TAIL=20 step upload_bench "$carry/bench/cuda/nuvec_cuda_upload_bench" "${UPLOAD_GIB:-4}" /tmp keep
  TAIL=8 step safetensors_load python3 bench/cuda/safetensors_load.py /tmp/nuvec-upload-bench.safetensors \
    --json "$out/safetensors_load.json"
  rm -f /tmp/nuvec-upload-bench.safetensors
  TAIL=6 step commit_bench "$carry/bench/cuda/nuvec_cuda_commit_bench" 64 1024
  for trace in traces/*.jsonl.gz; do
    TAIL=4 step "replay_$(basename "$trace" .jsonl.gz)" "$carry/bench/cuda/nuvec_cuda_replay_bench" "$trace"
  done
  TAIL=4 step torch_replay python3 bench/cuda/torch_replay.py traces/*.jsonl.gz
  # shellcheck disable=SC2086  # LLAMA_ARGS: extra options, e.g. "--rounds 3 --runs 3"
  TAIL=60 step torch_llama_bench python3 bench/cuda/torch_llama_bench.py \
    --json "$out/torch_llama_bench.json" ${LLAMA_ARGS:-}
fi
if [[ "${LLAMA_TRACE:-0}" == 1 && $SECONDS -lt ${TRACE_BEFORE_S:-420} ]]; then
  # nuvec's event trace of one Llama process (build, warm-up, one timed run), for replaying policies
  # elsewhere; gzip-compressed into $OUT beside the logs.
  NUVEC_TRACE="$out/llama_nuvec.jsonl" NUVEC_TRACE_EVENTS=1500000 TAIL=3 step llama_trace \
    python3 bench/cuda/torch_llama_bench.py --child nuvec --runs 1
  [[ -f "$out/llama_nuvec.jsonl" ]] && gzip -c "$out/llama_nuvec.jsonl" >"$final/llama_nuvec.jsonl.gz" && rm "$out/llama_nuvec.jsonl"
fi
tar -C "$(dirname "$out")" -czf "$final/gpu-logs.tar.gz" gpu-logs
echo "=== failed steps: ${failures[*]:-none}"
[[ ${#failures[@]} -eq 0 ]]
