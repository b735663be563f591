# The table of decode's weight bandwidth as a fraction of the read bandwidth,
# from `nuvec profile --json` outputs named profile-<file>-t<threads>-r<rep>.json
# (decode_bandwidth_h200.sh, decode_bandwidth_dev.sh): per file and thread
# count, the median over the reps of tokens/s, weight GB/s and the fraction
# (each profile's own fraction: its decode against the read bandwidth its
# process measured first), with every rep's fraction.
#   decode_bandwidth_table.py PROFILE.json...
import json
import re
import statistics
import sys
from collections import defaultdict

rows = defaultdict(list)
for path in sys.argv[1:]:
    m = re.search(r"profile-(.+)-t(\d+)-r(\d+)\.json$", path)
    if not m:
        continue
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError):
        print(f"{path}: no result (see its .err)", file=sys.stderr)
        continue
    decode = next(p for p in j["phases"] if p["phase"] == "decode")
    b = j["decode_bandwidth"]
    rows[(m.group(1), int(m.group(2)))].append(
        (decode["tokens_per_second"], b["weight_bytes_per_token"], b["weight_bytes_per_second"],
         b["read_bandwidth"]["bytes_per_second"], b["fraction_of_read_bandwidth"], j.get("kernels", "")))

print("| file | threads | decode tokens/s | weights per token (MiB) | weights read (GB/s) | read bandwidth (GB/s) "
      "| fraction | fractions of each run | kernels |")
print("|---|---:|---:|---:|---:|---:|---:|---|---|")
order = {"Q4_K_M": 0, "Q8_0": 1, "Q4_0": 2, "Q6_K": 3, "BF16": 4}
for (name, threads), runs in sorted(rows.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][0], kv[0][1])):
    med = [statistics.median(r[i] for r in runs) for i in range(5)]
    print(f"| {name} | {threads} | {med[0]:.1f} | {med[1] / 2**20:.1f} | {med[2] / 1e9:.2f} | {med[3] / 1e9:.2f} "
          f"| **{med[4]:.2f}** | {', '.join(f'{r[4]:.2f}' for r in runs)} | {runs[0][5]} |")
