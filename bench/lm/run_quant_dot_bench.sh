#!/usr/bin/env bash
# Two builds of nuvec_quant_dot_bench side by side in one run (a change's
# before and after), alternating which goes first each round, then a table
# of the medians (GB/s of weights, GMAC/s) and after/before ratios.
#   run_quant_dot_bench.sh BEFORE_BIN AFTER_BIN [ROUNDS (default 3)] [FILTER]
# With NUVEC_QUANT_PREFETCHES="0 1024 2048 ..." the after binary runs once
# more per round for each value of NUVEC_QUANT_PREFETCH (the prefetch
# distance of Q8_0's and Q4_0's path), as rows "after pf=N".
set -euo pipefail
before="$1"; after="$2"; rounds="${3:-3}"; filter="${4:-.}"
out=$(mktemp -d)
echo "date: $(date -u +%FT%TZ) | cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) | cores: $(nproc) | load: $(cut -d' ' -f1-3 /proc/loadavg)"
run() {  # label binary [env]
  local label="$1" bin="$2"; shift 2
  env "$@" "$bin" --benchmark_filter="$filter" --benchmark_format=json 2>/dev/null > "$out/$label-$round.json"
}
for round in $(seq "$rounds"); do
  if (( round % 2 )); then run before "$before"; run after "$after"; else run after "$after"; run before "$before"; fi
  for pf in ${NUVEC_QUANT_PREFETCHES:-}; do run "after pf=$pf" "$after" NUVEC_QUANT_PREFETCH="$pf"; done
done
python3 - "$out" <<'EOF'
import glob, json, os, statistics, sys
from collections import defaultdict
rows = defaultdict(lambda: defaultdict(list))
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    label = os.path.basename(f).rsplit("-", 1)[0]
    for b in json.load(open(f))["benchmarks"]:
        if "GB/s" in b:
            rows[b["name"]][label].append((b["GB/s"], b["GMAC/s"]))
labels = sorted({l for r in rows.values() for l in r}, key=lambda l: (l != "before", l != "after", l))
print("| benchmark | " + " | ".join(f"{l} GB/s | GMAC/s" for l in labels) + " | after/before |")
print("|---|" + "---|---|" * len(labels) + "---|")
for name, r in rows.items():
    med = {l: (statistics.median(v[0] for v in r[l]), statistics.median(v[1] for v in r[l])) for l in labels if r[l]}
    cells = " | ".join(f"{med[l][0]:.1f} | {med[l][1]:.1f}" if l in med else "- | -" for l in labels)
    ratio = med["after"][0] / med["before"][0] if "after" in med and "before" in med else float("nan")
    print(f"| {name} | {cells} | {ratio:.2f} |")
EOF
rm -rf "$out"
