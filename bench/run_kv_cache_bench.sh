#!/usr/bin/env bash
# The KV cache's precision, f32 against f16, on the built-in model: `nuvec
# profile` (load, prefill, decode, each in a fresh process) at a long prompt
# and a short one, the two precisions alternating round by round so that the
# machine's load falls on both alike. Prints a markdown report: medians of
# prefill and decode tokens/s, their ratio f16/f32, peak_with_mapped and the
# floor's KV cache, with the load average before and after.
#
#   bench/run_kv_cache_bench.sh NUVEC_BINARY [ROUNDS] > bench/results/DATE-kv-cache-f16.md
set -euo pipefail
nuvec=$1
rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/machine_rows.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for shape in "2048 32" "16 64"; do
  read -r prompt new <<<"$shape"
  for round in $(seq "$rounds"); do
    for kv in f32 f16; do
      "$nuvec" profile --prompt-len "$prompt" --max-new "$new" --kv-cache "$kv" --json --quiet \
        >"$tmp/p$prompt-$kv-$round.json"
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "# KV cache precision: f32 against f16 (built-in model)"
command_and_machine_rows "bench/run_kv_cache_bench.sh $nuvec $rounds"
echo "| load average before | $load_before |"
echo "| load average after | $load_after |"
echo
python3 - "$tmp" "$rounds" <<'PY'
import glob, json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
print(f"{rounds} rounds per shape, f32 and f16 alternating; medians (min..max).\n")
print("| prompt + new | cache | prefill tok/s | decode tok/s | prefill peak_with_mapped | decode peak_with_mapped | floor KV cache |")
print("|---|---|---|---|---|---|---|")
med = {}
for prompt, new in ((2048, 32), (16, 64)):
    for kv in ("f32", "f16"):
        runs = []
        for f in sorted(glob.glob(f"{tmp}/p{prompt}-{kv}-*.json")):
            ph = {p["phase"]: p for p in json.load(open(f))["phases"]}
            runs.append(ph)
        def col(phase, key):
            return [r[phase][key] for r in runs]
        pre, dec = col("prefill", "tokens_per_second"), col("decode", "tokens_per_second")
        peak_p = statistics.median(r["prefill"]["stats"]["peak_with_mapped"] for r in runs)
        peak_d = statistics.median(r["decode"]["stats"]["peak_with_mapped"] for r in runs)
        kvb = runs[0]["decode"]["floor"]["kv_cache"]
        med[(prompt, kv)] = (statistics.median(pre), statistics.median(dec), peak_p, peak_d)
        mib = lambda b: f"{b / 2**20:.1f} MiB"
        print(f"| {prompt} + {new} | {kv} | {statistics.median(pre):.1f} ({min(pre):.1f}..{max(pre):.1f}) "
              f"| {statistics.median(dec):.2f} ({min(dec):.2f}..{max(dec):.2f}) | {mib(peak_p)} | {mib(peak_d)} | {mib(kvb)} |")
print("\n| prompt + new | prefill f16/f32 | decode f16/f32 | prefill peak f16/f32 | decode peak f16/f32 |")
print("|---|---|---|---|---|")
for prompt, new in ((2048, 32), (16, 64)):
    a, b = med[(prompt, "f32")], med[(prompt, "f16")]
    print(f"| {prompt} + {new} | {b[0] / a[0]:.3f} | {b[1] / a[1]:.3f} | {b[2] / a[2]:.3f} | {b[3] / a[3]:.3f} |")
PY
