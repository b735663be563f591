#!/usr/bin/env python3
"""The table of a compare_llama_cpp.sh log: per file and thread count,
llama-bench's pp512 and tg32 (tokens/s), the mean of each nuvec binary's
runs, and nuvec / llama.cpp (targets: prefill >= 1.0, decode >= 1.1).

Usage: compare_summary.py compare.txt
"""
import re
import statistics
import sys
from collections import defaultdict

llama = {}  # (file, threads, test) -> t/s
runs = defaultdict(list)  # (file, binary, threads) -> [(prefill, decode)]
file = binary = threads = None
for line in open(sys.argv[1]):
    if m := re.match(r"=== (\S+)$", line):
        file = m.group(1)
    elif m := re.match(r"\|.*\|\s*(\d+)\s*\|\s*(pp512|tg32)\s*\|\s*([\d.]+)", line):
        llama[(file, int(m.group(1)), m.group(2))] = float(m.group(3))
    elif m := re.match(r"(\S+) run (\S+) threads (\d+)", line):
        binary, threads = m.group(1), int(m.group(3))
    elif m := re.search(r"prefill \d+ tokens in [\d.]+ s: ([\d.]+) tokens/s \| decode \d+ tokens in [\d.]+ s: ([\d.]+)", line):
        runs[(file, binary, threads)].append((float(m.group(1)), float(m.group(2))))

print("| file | threads | binary | prefill: llama.cpp | nuvec | ratio (>= 1.0) | decode: llama.cpp | nuvec | ratio (>= 1.1) |")
print("|---|---|---|---|---|---|---|---|---|")
for (f, b, t), r in sorted(runs.items()):
    pp, tg = llama.get((f, t, "pp512")), llama.get((f, t, "tg32"))
    p, d = statistics.mean(x[0] for x in r), statistics.mean(x[1] for x in r)
    ratio = lambda a, ref: f"{a / ref:.2f}" if ref else "-"  # noqa: E731
    print(f"| {f} | {t} | {b} | {pp or '-'} | {p:.1f} | {ratio(p, pp)} | {tg or '-'} | {d:.1f} | {ratio(d, tg)} |")
