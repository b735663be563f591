#!/usr/bin/env python3
"""Two nuvec_roofline builds side by side (a change's before and after), on a
machine that other work shares: the two binaries run alternately, round
after round (which one goes first alternates too), so that whatever else
runs falls on both alike; every figure is the median over the rounds, and
the table gives after / before for each.

Usage: compare_roofline.py BEFORE AFTER [--rounds N] [--isa ISA ...]
                           [--only prefill|decode ...]

Each round runs, for each instruction set (NUVEC_KERNEL_ISA; default: the
CPU's best) and each section, `BINARY --quick --only SECTION --scratch
/nonexistent` (the file-mapped decode row is left out: it writes ~770 MB and
runs the same linear() call as the rows above it). Prints a markdown table.
"""
import argparse
import os
import statistics
import subprocess
import sys


# Columns that are ratios to a bound measured in the same run, not figures
# of the kernel.
RATIOS = ("of the decode bound", "linear() / roofline")
# The prefill summary's columns, which repeat the figures of the table above it.
REPEATS = ("linear() GFLOP/s", "roofline GFLOP/s")


def figures(output):
    """{(row label, column): value} from the markdown tables of one run."""
    found = {}
    header = None
    for line in output.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if all(set(c) <= set("-:") for c in cells):
            continue
        parts = []
        for c, h in zip(cells, header):
            if h == "threads":
                parts.append(f"{c} threads")
            elif c and not _number(c) and h != "from":
                parts.append(c)
        label = " / ".join(parts)
        for c, h in zip(cells, header):
            if _number(c) and h != "threads":
                found[(label, h)] = float(c.rstrip("%"))
    return found


def _number(text):
    try:
        float(text.rstrip("%"))
        return True
    except ValueError:
        return False


def run(binary, isa, section):
    env = dict(os.environ)
    if isa:
        env["NUVEC_KERNEL_ISA"] = isa
    out = subprocess.run([binary, "--quick", "--only", section, "--scratch", "/nonexistent"], env=env,
                         check=True, capture_output=True, text=True).stdout
    others = [line for line in out.splitlines() if line.startswith("(other processes used")]
    return figures(out), others


def main():
    p = argparse.ArgumentParser()
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--isa", action="append", default=None, help="NUVEC_KERNEL_ISA values ('' = the CPU's best)")
    p.add_argument("--only", action="append", default=None, help="sections: prefill, decode")
    a = p.parse_args()
    isas = a.isa if a.isa is not None else [""]
    sections = a.only if a.only is not None else ["prefill", "decode"]

    samples = {}  # (isa, section, label, column, which) -> [values]
    load = []
    for r in range(a.rounds):
        order = [("before", a.before), ("after", a.after)]
        if r % 2:
            order.reverse()
        for isa in isas:
            for section in sections:
                for which, binary in order:
                    found, others = run(binary, isa, section)
                    load += others
                    for (label, column), v in found.items():
                        samples.setdefault((isa, section, label, column, which), []).append(v)
        print(f"round {r + 1} of {a.rounds} done", file=sys.stderr)

    print("| ISA | section | row | column | before | after | after / before |")
    print("|---|---|---|---|---:|---:|---:|")
    keys = list(dict.fromkeys(k[:4] for k in samples))  # in the order the runs print them
    for isa, section, label, column in keys:
        b = samples.get((isa, section, label, column, "before"))
        f = samples.get((isa, section, label, column, "after"))
        if not b or not f or column in RATIOS or column in REPEATS:
            continue
        mb, mf = statistics.median(b), statistics.median(f)
        print(f"| {isa or 'best'} | {section} | {label} | {column} | {mb:g} | {mf:g} | "
              f"{mf / mb if mb else float('nan'):.3f} |")
    busy = [float(line.split("used ")[1].split("%")[0]) for line in load]
    if busy:
        print(f"\nOther processes' share of the CPUs during the sections: median {statistics.median(busy):.0f}%, "
              f"max {max(busy):.0f}% ({len(busy)} sections).")


if __name__ == "__main__":
    main()
