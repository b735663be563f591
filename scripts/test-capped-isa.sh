#!/usr/bin/env bash
# The kernel and LM test programs of a build once more with the kernels
# capped below this machine: NUVEC_KERNEL_ISA=avx2, then portable
# (src/lm/kernels/cpu_isa.h). Capped, the kernels and every entry point that
# takes an instruction set (linear_with, attend_with, ...) refuse what lies
# above the cap, and the tests skip what needs it, as on a CPU without it: a
# machine with AVX-512 or AMX then still fails where a test or a library path
# assumes them. Each program runs whole, once per cap (not one process per
# case, as ctest runs them), to keep this cheap. A cap above the CPU changes
# nothing (the avx2 run of a CPU without AVX2 is its plain run again).
# Usage: scripts/test-capped-isa.sh BUILD_DIR   (scripts/test.sh: build/release)
set -euo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
programs=()
while IFS= read -r p; do programs+=("$p"); done < <(find "$build/tests/lm" -type f -perm -u+x | sort)
[ ${#programs[@]} -gt 0 ] || { echo "$0: no test programs under $build/tests/lm" >&2; exit 1; }

cd "$build/tests"  # where ctest runs them
for cap in avx2 portable; do
  start=$(date +%s)
  for p in "${programs[@]}"; do
    if ! NUVEC_KERNEL_ISA=$cap timeout 900 "$p" --gtest_brief=1 >"$build/capped-$cap-$(basename "$p").log" 2>&1; then
      cat "$build/capped-$cap-$(basename "$p").log" >&2
      echo "== capped kernels: $(basename "$p") failed with NUVEC_KERNEL_ISA=$cap" >&2
      exit 1
    fi
  done
  echo "== capped kernels: ${#programs[@]} programs passed with NUVEC_KERNEL_ISA=$cap in $(( $(date +%s) - start )) s" >&2
done
