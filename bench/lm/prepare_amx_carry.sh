#!/usr/bin/env bash
# Gathers what bench/lm/run_amx_device.sh needs on a machine without nuvec's
# build dependencies into one folder (default build/amx-carry) for the
# device tool's `carry`: `nuvec` built before the AMX path (BEFORE_BUILD, a
# release build of the commit before it) and with it (this tree's release
# build), nuvec_roofline built without OpenBLAS (which that machine lacks;
# build/release-noblas, configured here), nuvec_lm_runtime_bench of both
# builds (BEFORE_BUILD must have it built), the kernel and LM tests, libfmt,
# and the scripts.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
before="${BEFORE_BUILD:?set BEFORE_BUILD to a release build dir of the commit before the AMX path}"
after=build/release
noblas=build/release-noblas
out="${1:-$root/build/amx-carry}"
cmake --build --preset release --target nuvec_tool nuvec_lm_runtime_bench kernel_amx_test kernel_linear_test kernel_swiglu_test lm_attention_test \
  lm_session_test lm_ops_test >/dev/null
[[ -f $noblas/CMakeCache.txt ]] || cmake -S . -B "$noblas" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON >/dev/null
cmake --build "$noblas" --target nuvec_roofline >/dev/null
rm -rf "$out"
mkdir -p "$out/before" "$out/after" "$out/tests" "$out/lib"
cp "$before/tools/nuvec" "$before/bench/nuvec_lm_runtime_bench" "$out/before/"
cp "$after/tools/nuvec" "$after/bench/nuvec_lm_runtime_bench" "$out/after/"
cp "$noblas/bench/nuvec_roofline" "$out/after/"
cp "$after"/tests/lm/kernels/kernel_amx_test "$after"/tests/lm/kernels/kernel_linear_test "$after"/tests/lm/kernels/kernel_swiglu_test \
  "$after"/tests/lm/lm_attention_test "$after"/tests/lm/lm_session_test "$after"/tests/lm/lm_ops_test "$out/tests/"
fmt="$(readlink -f /usr/lib/x86_64-linux-gnu/libfmt.so)"
cp "$fmt" "$out/lib/"
ln -sf "$(basename "$fmt")" "$out/lib/$(objdump -p "$fmt" | awk '/SONAME/ {print $2}')"
# tools/nuvec reads tokenizer.model files through libsentencepiece (that machine has none).
cp "$(readlink -f /usr/lib/x86_64-linux-gnu/libsentencepiece.so.0)" "$out/lib/libsentencepiece.so.0"
cp bench/lm/run_amx_device.sh bench/lm/run_amx_warm.sh bench/lm/torch_prefill.py bench/lm/amx_summary.py "$out/"
strip --strip-debug "$out"/before/* "$out"/after/* "$out"/tests/* 2>/dev/null || true
du -sh "$out"
