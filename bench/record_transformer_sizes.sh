#!/usr/bin/env bash
# Records the allocation sizes of the built-in model's prefill and decode
# (NUVEC_TRACE of `nuvec profile-phase`, the child `nuvec profile` runs per
# phase) and prints them as the C++ list of bench/transformer_sizes.cc.
# Usage: bench/record_transformer_sizes.sh [path/to/nuvec]   (default build/release/tools/nuvec)
set -euo pipefail
nuvec="${1:-build/release/tools/nuvec}"
model="${NUVEC_MODEL_CACHE:-$HOME/.cache/nuvec/demo-model}"
[[ -e "$model" ]] || "$nuvec" profile --prompt-len 16 --max-new 2 >/dev/null  # writes the built-in model
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for phase in prefill decode; do
  NUVEC_TRACE="$tmp/$phase.jsonl" "$nuvec" profile-phase "$model" --phase "$phase" \
    --prompt-len 128 --max-new 32 --threads 1 >/dev/null
done
python3 - "$tmp/prefill.jsonl" "$tmp/decode.jsonl" <<'PY'
import json, sys
sizes = [json.loads(l)["requested"] for path in sys.argv[1:] for l in open(path)
         if '"event":"allocate"' in l]
print("// %d allocations: prefill, then decode" % len(sizes))
print(", ".join(str(s) for s in sizes))
PY
