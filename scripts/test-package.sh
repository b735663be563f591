#!/usr/bin/env bash
# The installed package, as a user meets it: installs a build directory's
# nuvec into a fresh prefix, then builds examples/cmake-consumer (through
# find_package) and examples/pkg-config-consumer (through nuvec.pc) against
# that prefix alone and runs both, and runs the installed `nuvec` command
# (for a shared build: every layer's library installed, none missing a
# dependency); then, for a static build, pip-installs the Python package
# (offline, into a fresh venv that sees Debian's numpy) and runs
# examples/python/quickstart.py with it. The README's "Use it from C++" and
# "Use it from Python" commands, with the module taken from the build
# directory's nuvec_python (NUVEC_BUILD_DIR) instead of a build of its own.
# Usage: scripts/test-package.sh [build-dir]   (default: build/release, built already)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
[ -f "$build/CMakeCache.txt" ] || { echo "test-package: $build is not a configured build directory (cmake --preset release first)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/nuvec-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --build "$build" --target nuvec nuvec_tool >/dev/null
cmake --install "$build" --prefix "$prefix" >/dev/null
echo "== installed into $prefix:" >&2
(cd "$prefix" && find . -type f -not -path './include/*' | sort >&2)

shared=$(sed -n 's/^BUILD_SHARED_LIBS:BOOL=//p' "$build/CMakeCache.txt")
if [ "$shared" = ON ]; then
  # Every layer as a shared library, each linked with --no-undefined
  # (cmake/NuvecLayers.cmake) and found beside the others.
  echo "== shared layers in $prefix/lib" >&2
  for layer in $(sed -n 's/^\s*nuvec_layer(\([a-z]*\) .*/\1/p' CMakeLists.txt); do
    so=$(find "$prefix" -name "libnuvec_$layer.so" | head -1)
    [ -n "$so" ] || { echo "test-package: libnuvec_$layer.so is not installed" >&2; exit 1; }
    if ldd "$so" | grep -q "not found"; then ldd "$so" >&2; echo "test-package: $so misses a library" >&2; exit 1; fi
  done
fi

# The installed command runs from the prefix alone (a shared build finds its
# libraries through its run path, $ORIGIN/../lib).
echo "== $prefix/bin/nuvec" >&2
"$prefix/bin/nuvec" --version
"$prefix/bin/nuvec" stats >/dev/null

# The build tree must not leak into the consumers: no source include/ and
# no build directory on their paths, only the prefix.
echo "== examples/cmake-consumer" >&2
cmake -S examples/cmake-consumer -B "$work/cmake-consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >/dev/null
cmake --build "$work/cmake-consumer" >/dev/null
"$work/cmake-consumer/cmake_consumer" "$work/consumer.safetensors"

echo "== examples/pkg-config-consumer" >&2
cp -r examples/pkg-config-consumer "$work/pkg-config-consumer"
pc=$(find "$prefix" -name nuvec.pc -printf '%h')
PKG_CONFIG_PATH="$pc" make -s -C "$work/pkg-config-consumer"
# pkg-config adds no run path: a shared libnuvec.so outside the loader's
# folders is found through LD_LIBRARY_PATH.
LD_LIBRARY_PATH="$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir nuvec)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$work/pkg-config-consumer/pkg_config_consumer"

if [ "$shared" = ON ]; then
  # The module carries the library inside it, so it is built from static
  # layers only (python/CMakeLists.txt); scripts/test-package.sh build/release tests it.
  echo "== package: both consumers built against the shared $prefix and ran; no Python module in a shared build" >&2
  exit 0
fi

echo "== Python: pip install --no-build-isolation --no-index . into a venv" >&2
cmake --build "$build" --target nuvec_python >/dev/null
python=$(sed -n 's/^NUVEC_PYTHON_EXECUTABLE:FILEPATH=//p' "$build/CMakeCache.txt")
[ -n "$python" ] || { echo "test-package: $build has no Python module (no python3 with pybind11 and numpy)" >&2; exit 1; }
"$python" -m venv --system-site-packages "$work/venv"
NUVEC_BUILD_DIR="$(cd "$build" && pwd)" "$work/venv/bin/python" -m pip install -q --no-build-isolation --no-index \
  --no-cache-dir . >/dev/null
# From a folder outside the source tree: the installed package, not python/.
(cd "$work" && "$work/venv/bin/python" -c 'import nuvec, sys; assert nuvec.__file__.startswith(sys.prefix), nuvec.__file__' \
  && "$work/venv/bin/python" "$OLDPWD/examples/python/quickstart.py" "$work/quickstart.safetensors")

echo "== package: both consumers built against $prefix and ran; the Python package installed and ran" >&2
