#!/usr/bin/env bash
# Installs the Debian 12 packages nuvec builds with, if any are missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev libjemalloc-dev libmimalloc-dev
  libfmt-dev nlohmann-json3-dev libcli11-dev libboost-dev zlib1g-dev
  python3-matplotlib
  python3-torch  # tests/lm: the plain-PyTorch reference forward pass (LmTorchReference)
  chromium  # tests/trace_py/plot_html_test.py: `nuvec plot --html` in a headless browser
  libopenblas-dev  # bench/lm (nuvec_roofline): the reference GEMM
  libpcre2-dev libutf8proc-dev  # src/text: pre-tokenizer regexes, Unicode normal forms
  python3-jinja2  # tests/text: the reference renderer of chat templates
  make  # examples/pkg-config-consumer
  # The Python module (python/): built with pybind11 for Debian's python3,
  # installed with pip into a venv, tested with pytest.
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pip python3-venv python3-setuptools python3-pytest
)

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
