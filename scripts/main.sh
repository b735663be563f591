#!/usr/bin/env bash
# The main job on its built-in default: installs what it needs, builds the
# release preset and runs `nuvec profile` on the built-in model (written once
# to ~/.cache/nuvec/demo-model, or $NUVEC_MODEL_CACHE): load, prefill and
# decode, each measured in a fresh process, as one table. Pass other nuvec
# arguments to run those instead, e.g. `scripts/main.sh profile --prompt-len
# 8192` or `scripts/main.sh demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target nuvec_tool >/dev/null
if [ $# -eq 0 ]; then set -- profile; fi
exec build/release/tools/nuvec "$@"
