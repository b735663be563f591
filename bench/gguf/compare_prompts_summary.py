#!/usr/bin/env python3
"""Tables from compare_prompts.sh's output: per thread count and prompt,
llama-bench's prefill without and with flash attention, nuvec's (median of
its runs; llama-bench's also medians over rounds), and nuvec / the faster
llama.cpp; then decode: llama-bench's tg32
against nuvec's 32 steps after a 1-token prompt (both from an empty
context), and nuvec's decode after each prompt for reference.

    compare_prompts_summary.py OUTPUT.txt
"""
import re
import statistics
import sys
from collections import defaultdict


def med(values):
    return {fa: statistics.median(v) for fa, v in values.items()}


def main():
    llama = defaultdict(lambda: defaultdict(list))  # (threads, test) -> {fa: [t/s per round]}
    nuvec_prefill = defaultdict(list)  # (threads, prompt) -> [t/s]
    nuvec_decode = defaultdict(list)
    threads = None
    pending = None
    columns = {}
    for line in open(sys.argv[1]):
        line = line.rstrip("\n")
        if m := re.match(r"=== threads (\d+)", line):
            threads = int(m.group(1))
        elif line.startswith("|") and "---" not in line:
            cells = [c.strip() for c in line.strip("|").split("|")]
            if "t/s" in cells:  # the header: llama-bench leaves out columns at their defaults (fa)
                columns = {name: i for i, name in enumerate(cells)}
                continue
            fa = cells[columns["fa"]] if "fa" in columns else "0"
            rate = float(cells[columns["t/s"]].split("±")[0])
            llama[(int(cells[columns["threads"]]), cells[columns["test"]])][fa].append(rate)
        elif m := re.match(r"nuvec prompt (\d+) threads (\d+)", line):
            pending = (int(m.group(2)), int(m.group(1)))
        elif m := re.match(r"nuvec decode threads (\d+)", line):
            pending = (int(m.group(1)), 1)
        elif pending and (m := re.search(r"prefill \d+ tokens in [\d.]+ s: ([\d.]+) tokens/s \| decode \d+ tokens in "
                                         r"[\d.]+ s: ([\d.]+) tokens/s", line)):
            nuvec_prefill[pending].append(float(m.group(1)))
            nuvec_decode[pending].append(float(m.group(2)))
            pending = None
    print("| threads | prompt | llama.cpp | llama.cpp -fa 1 | nuvec | nuvec / faster llama.cpp |")
    print("|---:|---:|---:|---:|---:|---:|")
    for (t, p) in sorted(nuvec_prefill):
        if p == 1:
            continue
        ll = med(llama.get((t, f"pp{p}"), {}))
        nv = statistics.median(nuvec_prefill[(t, p)])
        best = max(ll.values()) if ll else float("nan")
        print(f"| {t} | {p} | {ll.get('0', float('nan')):.1f} | {ll.get('1', float('nan')):.1f} | {nv:.1f} | "
              f"**{nv / best:.2f}** |")
    print()
    print("| threads | llama.cpp tg32 | llama.cpp tg32 -fa 1 | nuvec, 32 steps from empty | nuvec / faster | "
          "nuvec decode after each prompt |")
    print("|---:|---:|---:|---:|---:|---|")
    for t in sorted({t for t, _ in nuvec_decode}):
        ll = med(llama.get((t, "tg32"), {}))
        nv = statistics.median(nuvec_decode.get((t, 1), [float("nan")]))
        best = max(ll.values()) if ll else float("nan")
        after = ", ".join(f"{p}: {statistics.median(v):.1f}" for (s, p), v in sorted(nuvec_decode.items())
                          if s == t and p != 1)
        print(f"| {t} | {ll.get('0', float('nan')):.1f} | {ll.get('1', float('nan')):.1f} | {nv:.1f} | "
              f"**{nv / best:.2f}** | {after} |")


if __name__ == "__main__":
    main()
