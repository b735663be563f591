#!/usr/bin/env bash
# One H200 call for issue 16's GPU figures, run from a folder that
# bench/cuda/prepare_carry.sh made (plus this script, bench/python/*.py and
# bench/cuda/safetensors_load.py copied beside it, and site/ with the Python
# module built for that machine's python3): the upload tests, the upload sweep
# (nuvec_cuda_upload_bench sweep), nuvec.torch.load_file beside
# safetensors.torch.load_file on the sweep's file, python3 -m nuvec.profile on
# a random-weight Llama, the GPU pytest, O_DIRECT reads, and the module's
# upload with and without PyTorch in the process beside the C++ one
# (`presence`: bench/python/upload_torch_presence.py; site-shared/, if
# carried, holds the module built with CUDART=shared). Each step's
# output in $OUT/results/<step>.txt (tarred into $OUT/results.tgz); a step
# that would pass DEADLINE seconds (default 240) after the start is cut
# short or skipped. Usage: cd CARRY && ./run_package_h200.sh
# The device tool sends the checkout its session started in: from a
# helper's worktree, copy the carry folder into an ignored folder of that
# checkout and name that path in `carry`.
set -uo pipefail
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$PWD/lib PYTHONDONTWRITEBYTECODE=1
R=${OUT:-/tmp/out}/results; mkdir -p "$R"
T0=$(date +%s); DEADLINE=${DEADLINE:-240}
step() {  # step NAME LIMIT_S COMMAND...
  local name=$1 limit=$2; shift 2
  local now=$(( $(date +%s) - T0 ))
  if (( now + 5 > DEADLINE )); then echo "== $name skipped at ${now}s" | tee -a "$R/steps.txt"; return; fi
  (( now + limit > DEADLINE )) && limit=$(( DEADLINE - now ))
  local s=$(date +%s.%N)
  timeout "$limit" "$@" > "$R/$name.txt" 2>&1; local rc=$?
  echo "== $name rc=$rc $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $s}")s (at ${now}s)" | tee -a "$R/steps.txt"
  tail -3 "$R/$name.txt"
}
finish() { tar czf "${OUT:-/tmp/out}/results.tgz" -C "${OUT:-/tmp/out}" results; }
trap finish EXIT
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 --version; nproc; date -u;
  python3 -c "import torch, transformers, safetensors; print(torch.__version__, transformers.__version__, safetensors.__version__)";
  python3 -c "import pynvml; print('pynvml', pynvml.__file__)" 2>&1 | tail -1; uname -r;
  cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; } > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
export PYTHONPATH=$PWD/site
# The module is carried built for this python3 (build_module_on_gpu.sh, run there with PYTHON and
# PYBIND11_INCLUDES); built here only if it does not import.
if ! python3 -c "import nuvec" > "$R/import.txt" 2>&1; then
  ./build_module_on_gpu.sh > "$R/build_module.txt" 2>&1; echo "== build_module rc=$?" | tee -a "$R/steps.txt"
fi
# STEPS: which steps, in this order (default: the first call's; the second ran
# "gtest_upload upload_sweep_staging load_file make_model profile pytest_profile").
STEPS=${STEPS:-gtest_upload upload_sweep load_file make_model profile pytest direct}
for name in $STEPS; do
  case $name in
    gtest_upload) step $name 40 tests/cuda/cuda_upload_test --gtest_brief=1 ;;
    gtest_device) step $name 60 tests/cuda/cuda_device_test --gtest_brief=1 ;;
    # DDP steps on every GPU (one process each, NCCL), nuvec's allocator beside PyTorch's
    # (bench/cuda/torch_ddp_step.py, which prepare_carry.sh puts in the carry), and its pytest.
    ddp) step $name 240 python3 bench/cuda/torch_ddp_step.py --json "$R/ddp.json" ;;
    # The same seeded DDP steps DDP_RUNS times (default 5), each a fresh set of processes, with
    # every phase's figures and nuvec's traces (issue 28: a peak that repeats); DDP_ALLOCATORS
    # picks the allocators (default both).
    ddp_repeat) for i in $(seq 1 "${DDP_RUNS:-5}"); do
                  mkdir -p "$R/ddp-trace$i"
                  step ddp_run$i 120 python3 bench/cuda/torch_ddp_step.py --allocators "${DDP_ALLOCATORS:-torch,nuvec}" \
                    --phases --trace-dir "$R/ddp-trace$i" --json "$R/ddp$i.json"
                done ;;
    # generate() of the 1.1B shape under both allocators, GEN_ROUNDS processes each (default 5).
    generate) step $name 300 python3 bench/cuda/torch_llama_bench.py --rounds "${GEN_ROUNDS:-5}" --runs "${GEN_RUNS:-2}" \
                --json "$R/generate.json" ;;
    pytest_ddp) step $name 240 python3 -m pytest -q -p no:cacheprovider python/tests/test_torch_ddp.py ;;
    upload_sweep) step $name 90 bench/cuda/nuvec_cuda_upload_bench 4 /tmp sweep keep rounds=7 ;;
    upload_sweep_staging) step $name 40 bench/cuda/nuvec_cuda_upload_bench 4 /tmp sweep-staging keep rounds=${ROUNDS:-5} ;;
    # The default options alone, as the Python module's upload is compared with (file reused if kept).
    upload_default|upload_default_after)
      step $name 40 bench/cuda/nuvec_cuda_upload_bench 4 /tmp sweep-default keep reuse rounds=${ROUNDS:-7} ;;
    # The module's upload with and without PyTorch in the process (bench/python/upload_torch_presence.py);
    # site-shared/: the module linked to the shared CUDA runtime, if carried.
    presence) step $name 120 env NUVEC_LOAD_FILE=/tmp/nuvec-upload-bench.safetensors BUDGET_S=${PRESENCE_S:-0} \
                ROUNDS=${PRESENCE_ROUNDS:-0} NUVEC_CPP_BENCH=$PWD/bench/cuda/nuvec_cuda_upload_bench \
                $([[ -d site-shared ]] && echo NUVEC_SHARED_SITE=$PWD/site-shared) python3 upload_torch_presence.py ${PRESENCE_VARIANTS:-} ;;
    load_file) step $name 75 env NUVEC_LOAD_FILE=/tmp/nuvec-upload-bench.safetensors python3 torch_load_file_bench.py ;;
    make_model) step $name 25 python3 make_random_llama.py /tmp/model --hidden 1024 --layers 4 ;;
    profile) step $name 80 python3 -m nuvec.profile /tmp/model --device cuda --prompt-len 256 --max-new 16 \
               --jobs ${PROFILE_JOBS:-1} --json-out "$R/profile.json" ;;
    pytest) step $name 90 python3 -m pytest -q -p no:cacheprovider python/tests/test_torch_cuda.py \
              python/tests/test_torch.py python/tests/test_profile.py ;;
    pytest_torch) step $name 60 python3 -m pytest -q -p no:cacheprovider python/tests/test_torch_cuda.py python/tests/test_torch.py ;;
    pytest_profile) step $name 100 python3 -m pytest -q -p no:cacheprovider python/tests/test_profile.py ;;
    direct) step $name 25 bench/cuda/nuvec_cuda_upload_bench 4 /tmp direct reuse keep ;;
    *) echo "unknown step $name" | tee -a "$R/steps.txt" ;;
  esac
done
