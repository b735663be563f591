#!/usr/bin/env python3
"""The table of run_alloc_before_after.sh: nuvec's allocate+free pair
before and after a change, per trace and thread count — the median over
rounds and passes of ns/pair (wall clock, all threads together), the ratio
after/before, nuvec against glibc at 1 thread (same pass, same process),
and the scaling (pairs/s at N threads over 1) against its targets. Rows of
both sides come from the same machine in alternating rounds.

Usage: alloc_before_after.py OUT_DIR   (reads OUT_DIR/{before,after}-r<N>-<pass>.json)"""
import glob
import os
import re
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alloc_results import TARGET_SCALING, load, pair_ns, pairs  # noqa: E402


def collect(out_dir):
    """{side: {(trace, allocator, threads): [ns/pair...]}}, {side: {(trace, allocator, threads): [pairs/s]}},
    and {side: [nuvec/glibc ratio at 1 thread, per trace]}"""
    times = {"before": defaultdict(list), "after": defaultdict(list)}
    rates = {"before": defaultdict(list), "after": defaultdict(list)}
    vs_glibc = {"before": defaultdict(list), "after": defaultdict(list)}
    for path in sorted(glob.glob(os.path.join(out_dir, "*-r*-*.json"))):
        m = re.match(r"(before|after)-r(\d+)-([\w-]+)\.json$", os.path.basename(path))
        if not m:
            continue
        side, _, pass_name = m.groups()
        table = pairs(load(path)[1])
        for (trace, alloc, threads), b in table.items():
            times[side][(trace, alloc, threads)].append(pair_ns(b))
            rates[side][(trace, alloc, threads)].append(b["items_per_second"])
            if pass_name == "glibc" and alloc == "nuvec" and (trace, "malloc", threads) in table:
                vs_glibc[side][(trace, threads)].append(pair_ns(b) / pair_ns(table[(trace, "malloc", threads)]))
    return times, rates, vs_glibc


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    times, rates, vs_glibc = collect(sys.argv[1])
    if not times["before"] or not times["after"]:
        sys.exit("alloc_before_after.py: no before-r*-*.json and after-r*-*.json in %s" % sys.argv[1])
    keys = sorted(k for k in times["before"] if k[1] == "nuvec" and k in times["after"])
    med = statistics.median
    out = ["# nuvec's allocate+free pair, before and after", "",
           "Medians over every round and pass (`n`: runs per side); ns/pair is wall-clock time per pair of the",
           "total throughput; `vs glibc`: nuvec / glibc's malloc in the same process (glibc pass); scaling:",
           "pairs/s at N threads over 1 thread.", "",
           "| trace | threads | n | before ns/pair | after ns/pair | after/before | vs glibc before | vs glibc after |"
           " scaling before | scaling after |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    verdicts = []
    for trace, _, threads in keys:
        b, a = times["before"][(trace, "nuvec", threads)], times["after"][(trace, "nuvec", threads)]
        cells = [trace, str(threads), str(min(len(b), len(a))), "%.1f" % med(b), "%.1f" % med(a),
                 "%.3f" % (med(a) / med(b))]
        for side in ("before", "after"):
            r = vs_glibc[side].get((trace, threads))
            cells.append("%.2f" % med(r) if r else "")
        for side in ("before", "after"):
            one = rates[side].get((trace, "nuvec", 1))
            many = rates[side].get((trace, "nuvec", threads))
            cells.append("%.2f" % (med(many) / med(one)) if one and many else "")
        out.append("| " + " | ".join(cells) + " |")
        r = vs_glibc["after"].get((trace, threads))
        if threads == 1 and r:
            verdicts.append("- %s, 1 thread, after: nuvec/glibc %.2f (target <= 1.00: %s)" % (
                trace, med(r), "met" if med(r) <= 1.0 else "NOT met"))
        if threads in TARGET_SCALING and rates["after"].get((trace, "nuvec", 1)):
            s = med(rates["after"][(trace, "nuvec", threads)]) / med(rates["after"][(trace, "nuvec", 1)])
            goal = TARGET_SCALING[threads]
            verdicts.append("- %s, %d threads, after: scaling %.2fx (target >= %.0fx: %s)" % (
                trace, threads, s, goal, "met" if s >= goal else "NOT met"))
        verdicts.append("- %s, %d thread%s: after/before %.3f (%s)" % (
            trace, threads, "" if threads == 1 else "s", med(a) / med(b), "no slower" if med(a) <= med(b) * 1.02 else "SLOWER by more than 2%"))
    out += ["", "## Targets", ""] + verdicts
    print("\n".join(out))


if __name__ == "__main__":
    main()
