#!/usr/bin/env python3
"""Tabulates what bench/lm/run_amx_device.sh wrote into one folder.

Reads {before,after}-{model}-{threads}-{round}.json (`nuvec profile
--json`) and torch-{model}.jsonl (bench/lm/torch_prefill.py) and prints a
Markdown table: prefill and decode tokens/s of nuvec before and after the
AMX path (medians over the rounds, with the range) and of PyTorch, their
ratios, and peak_with_mapped / floor of each nuvec phase (the largest over
the rounds).
Usage: amx_summary.py FOLDER
"""
import glob
import json
import os
import sys


def phase(profile, name):
    return next(p for p in profile["phases"] if p["phase"] == name)


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def rounds(folder, build, name):
    """Every round's profile of one build, model and thread count."""
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(folder, f"{build}-{name}-*.json")))]


def rate(profiles, which):
    values = [phase(p, which)["tokens_per_second"] for p in profiles]
    return median(values), min(values), max(values)


def main():
    folder = sys.argv[1]
    torch_rows = {}
    for path in glob.glob(os.path.join(folder, "torch-*.jsonl")):
        model = os.path.basename(path)[len("torch-"):-len(".jsonl")]
        for line in open(path):
            if line.startswith("{"):
                row = json.loads(line)
                torch_rows[(model, row["threads"])] = row
    print("| model | threads | kernels before → after | prefill tok/s: before | after | PyTorch | after / PyTorch "
          "| after / before | decode tok/s: before | after | PyTorch | peak_with_mapped / floor, prefill after "
          "| decode after |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    names = sorted({os.path.basename(p)[len("after-"):].rsplit("-", 1)[0]
                    for p in glob.glob(os.path.join(folder, "after-*-*-*.json"))})
    for name in names:
        model, threads = name.rsplit("-", 1)
        threads = int(threads)
        after, before = rounds(folder, "after", name), rounds(folder, "before", name)
        torch_row = torch_rows.get((model, threads))
        a_pre, a_pre_lo, a_pre_hi = rate(after, "prefill")
        b_pre, b_pre_lo, b_pre_hi = rate(before, "prefill")
        a_dec, a_dec_lo, a_dec_hi = rate(after, "decode")
        b_dec, b_dec_lo, b_dec_hi = rate(before, "decode")
        t_pre = torch_row["prefill_tokens_per_s"] if torch_row else float("nan")
        t_dec = torch_row["decode_tokens_per_s"] if torch_row else float("nan")
        kernels = f"{before[0]['kernels']} → {after[0]['kernels']}"
        floor_pre = max(phase(p, "prefill")["peak_with_mapped_over_floor"] for p in after)
        floor_dec = max(phase(p, "decode")["peak_with_mapped_over_floor"] for p in after)
        print(f"| {model} | {threads} | {kernels} | {b_pre:.0f} ({b_pre_lo:.0f}–{b_pre_hi:.0f}) "
              f"| {a_pre:.0f} ({a_pre_lo:.0f}–{a_pre_hi:.0f}) | {t_pre:.0f} | {a_pre / t_pre:.2f}× "
              f"| {a_pre / b_pre:.2f}× | {b_dec:.1f} ({b_dec_lo:.1f}–{b_dec_hi:.1f}) "
              f"| {a_dec:.1f} ({a_dec_lo:.1f}–{a_dec_hi:.1f}) | {t_dec:.1f} | {floor_pre:.3f} | {floor_dec:.3f} |")
    print(f"\n({len(after)} rounds of the last row's builds; nuvec: median (range) of the rounds; "
          "PyTorch: median of 3 prefills, one decode run)")

if __name__ == "__main__":
    main()
