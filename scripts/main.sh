#!/usr/bin/env bash
# The main job on its built-in default: installs what it needs, builds the
# release preset and runs `nuvec demo` (pass other nuvec arguments to run
# those instead, e.g. `scripts/main.sh stats --json`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target nuvec_tool >/dev/null
if [ $# -eq 0 ]; then set -- demo; fi
exec build/release/tools/nuvec "$@"
