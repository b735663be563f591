#!/usr/bin/env bash
# The LM runtime on the GPU side by side with llama.cpp's CUDA build and
# PyTorch, on the H200 machine, in one device call, from the repository root
# with the folder bench/cuda/prepare_lm_cuda_carry.sh makes with COMPARE=1 (CARRY,
# default build/lm-cuda-carry):
#   1. llama.cpp (c392e509) built there with -DGGML_CUDA=ON for sm_90, or
#      its llama-bench and llama-quantize from an earlier call (CARRY/llama-bin);
#   2. random-weight GGUFs of the 1.1B shape (22 layers, hidden 2048, GQA
#      32/4, ff 5632, vocab 32000): f16 from bench/gguf/make_random_gguf.py,
#      then llama-quantize to FILES (default "BF16 Q8_0 Q4_0 Q4_K_M"), and
#      a bf16 checkpoint directory of the same shape (`nuvec demo-model`,
#      context 8448) for PyTorch;
#   3. llama-bench -p PROMPT -n NEW -ngl 99, flash attention off and on,
#      REPS repetitions, per file; nuvec_gpu_session_bench (warm, the same
#      pp/tg) on the BF16 file and on the directory; torch_sdpa_bench.py on
#      the directory; each program REPS_ROUNDS times, interleaved;
#   4. `nuvec profile --device cuda` on the directory at PROMPT and at 8192
#      tokens (the memory rows, NVML beside them), nuvec_gpu_session_bench and
#      PyTorch's at 8192 (3 repetitions), and `nuvec run --device cuda` under
#      a limit below the weights (refused);
#   5. with SHAPE_7B=1, while the call has time (less than LATEST_7B s,
#      default 330, gone by then), an f16 GGUF of a 7B shape (32 layers,
#      hidden 4096, GQA 32/8, ff 11008, vocab 32000): llama-bench and
#      nuvec_gpu_session_bench on it, 3 repetitions.
# Writes to $OUT (default /tmp/gpu-compare-out): compare.txt (everything),
# and, when it built llama.cpp and SAVE_LLAMA_BIN is 1 (the default),
# llama-bench and llama-quantize (stripped) as llama-bin.tar.xz.aa, .ab, ...
# (about 65 MiB: more than a carry holds beside nuvec's).
#   bash bench/cuda/compare_gpu_h200.sh
set -uo pipefail
carry="$(realpath "${CARRY:-build/lm-cuda-carry}")"
out="${OUT:-/tmp/gpu-compare-out}"
prompt="${PROMPT:-512}" new="${NEW:-128}" reps="${REPS:-5}" rounds="${REPS_ROUNDS:-2}"
files="${FILES:-BF16 Q8_0 Q4_0 Q4_K_M}"
mkdir -p "$out"
here="$PWD"
# cuBLASLt (nuvec) and cuBLAS (llama.cpp) are the machine's: the toolkit's, else PyTorch's wheels'.
libs="$carry/lib"
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  found="$(find -H "$dir" -maxdepth 4 -name 'libcublasLt.so.13' 2>/dev/null | head -n 1)"
  if [[ -n "$found" ]]; then libs="$libs:$(dirname "$found")"; break; fi
done
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
t0=$SECONDS
exec > >(tee "$out/compare.txt") 2>&1
echo "=== machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader) | $(nproc) cores | $(date -u +%FT%TZ)"
echo "=== nuvec $(cat "$carry/COMMIT" 2>/dev/null)"

bin=/tmp/gpu-compare-bin
mkdir -p "$bin" /tmp/llama
tar -xJf "$carry/llama-src.tar.xz" -C /tmp/llama llama-src/gguf-py 2>/dev/null || tar -xJf "$carry/llama-src.tar.xz" -C /tmp/llama
if [[ -x "$carry/llama-bin/llama-bench" ]]; then
  cp "$carry/llama-bin/llama-bench" "$carry/llama-bin/llama-quantize" "$bin/"
else
  tar -xJf "$carry/llama-src.tar.xz" -C /tmp/llama
  cmake -S /tmp/llama/llama-src -B /tmp/llama/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=ON -DLLAMA_CURL=OFF > /tmp/llama/cmake.log 2>&1 ||
    { tail -20 /tmp/llama/cmake.log; exit 1; }
  timeout "${BUILD_TIMEOUT:-420}" cmake --build /tmp/llama/build -j "$(nproc)" --target llama-bench llama-quantize \
    > /tmp/llama/build.log 2>&1 || { tail -20 /tmp/llama/build.log; exit 1; }
  cp /tmp/llama/build/bin/llama-bench /tmp/llama/build/bin/llama-quantize "$bin/"
  strip "$bin/llama-bench" "$bin/llama-quantize"
  # Back for the next call's carry (LLAMA_BIN), in pieces under $OUT's 16 MiB a file:
  # cat llama-bin.tar.xz.* | tar -xJ.
  if [[ "${SAVE_LLAMA_BIN:-1}" == 1 ]]; then
    tar -cJf - -C "$bin" llama-bench llama-quantize | split -b 15M - "$out/llama-bin.tar.xz."
  fi
  echo "=== llama.cpp built in $((SECONDS - t0)) s"
fi
ls -la "$bin"

work=/tmp/gpu-compare-files
mkdir -p "$work"
python3 bench/gguf/make_random_gguf.py /tmp/llama/llama-src/gguf-py "$work/f16.gguf" > /dev/null ||
  { echo "make_random_gguf.py failed"; exit 1; }
for q in $files; do
  "$bin/llama-quantize" "$work/f16.gguf" "$work/$q.gguf" "$q" "$(nproc)" > /dev/null 2>&1 || echo "quantize $q failed"
done
rm -f "$work/f16.gguf"
dir="$work/dir-bf16"
"$carry/nuvec" demo-model "$dir" --dtype bf16 --vocab 32000 --hidden 2048 --intermediate 5632 --layers 22 \
  --heads 32 --kv-heads 4 --context 8448 > /dev/null || { echo "demo-model failed"; exit 1; }
ls -la "$work"
echo "=== files made at $((SECONDS - t0)) s"

for ((round = 1; round <= rounds; round++)); do
  echo "=== round $round"
  for q in $files; do
    timeout 300 "$bin/llama-bench" -m "$work/$q.gguf" -p "$prompt" -n "$new" -ngl 99 -fa 0,1 -r "$reps" -o md 2>&1 |
      grep -E "^\|"
  done
  echo "--- nuvec_gpu_session_bench BF16.gguf"
  timeout 300 "$carry/nuvec_gpu_session_bench" "$work/BF16.gguf" --prompt "$prompt" --decode "$new" --repetitions "$reps"
  echo "--- nuvec_gpu_session_bench dir-bf16"
  timeout 300 "$carry/nuvec_gpu_session_bench" "$dir" --prompt "$prompt" --decode "$new" --repetitions "$reps"
  echo "--- torch_sdpa_bench dir-bf16"
  timeout 300 python3 bench/cuda/torch_sdpa_bench.py "$dir" --prompt "$prompt" --decode "$new" --repetitions "$reps"
  echo "=== round $round done at $((SECONDS - t0)) s"
done
for p in "$prompt" 8192; do
  echo "--- nuvec profile --device cuda dir-bf16 --prompt-len $p"
  timeout 300 "$carry/nuvec" profile "$dir" --device cuda --prompt-len "$p" --max-new "$new" --quiet
done
echo "--- nuvec_gpu_session_bench dir-bf16 --prompt 8192"
timeout 300 "$carry/nuvec_gpu_session_bench" "$dir" --prompt 8192 --decode "$new" --repetitions 3
echo "--- torch_sdpa_bench dir-bf16 --prompt 8192"
timeout 300 python3 bench/cuda/torch_sdpa_bench.py "$dir" --prompt 8192 --decode "$new" --repetitions 3
# A limit below the weights: refused with one sentence, exit 1, nothing run.
echo "--- NUVEC_MEMORY_LIMIT_CUDA0=1GiB nuvec run dir-bf16 --device cuda"
NUVEC_MEMORY_LIMIT_CUDA0=1GiB timeout 120 "$carry/nuvec" run "$dir" --device cuda --prompt-len 8 --max-new 4 --quiet
echo "exit $?"
if [[ "${SHAPE_7B:-0}" == 1 && $((SECONDS - t0)) -lt "${LATEST_7B:-330}" ]]; then
  echo "=== 7B shape (32 layers, 4096, GQA 32/8, ff 11008), f16, at $((SECONDS - t0)) s"
  rm -rf "$work"  # the 1.1B files: room on the disk
  mkdir -p "$work"
  python3 bench/gguf/make_random_gguf.py /tmp/llama/llama-src/gguf-py "$work/7b-f16.gguf" 32 4096 11008 32 8 32000 \
    > /dev/null || echo "make_random_gguf.py (7B) failed"
  echo "=== 7B file made at $((SECONDS - t0)) s"
  timeout 200 "$bin/llama-bench" -m "$work/7b-f16.gguf" -p "$prompt" -n "$new" -ngl 99 -fa 0,1 -r 3 -o md 2>&1 |
    grep -E "^\|"
  echo "--- nuvec_gpu_session_bench 7b-f16.gguf"
  timeout 200 "$carry/nuvec_gpu_session_bench" "$work/7b-f16.gguf" --prompt "$prompt" --decode "$new" --repetitions 3
elif [[ "${SHAPE_7B:-0}" == 1 ]]; then
  echo "=== 7B shape: skipped, $((SECONDS - t0)) s gone (LATEST_7B ${LATEST_7B:-330})"
fi
cd "$here" || exit 1
echo "=== total $((SECONDS - t0)) s"
