#!/usr/bin/env python3
"""Tabulates what bench/lm/run_amx_device.sh wrote into one folder.

Reads {before,after}-{model}-{threads}.json (`nuvec profile --json`) and
torch-{model}.jsonl (bench/lm/torch_prefill.py) and prints a Markdown table:
prefill and decode tokens/s of nuvec before and after the AMX path and of
PyTorch, their ratios, and peak_with_mapped / floor of each nuvec phase.
Usage: amx_summary.py FOLDER
"""
import glob
import json
import os
import sys


def phase(profile, name):
    return next(p for p in profile["phases"] if p["phase"] == name)


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
    for path in sorted(glob.glob(os.path.join(folder, "after-*.json"))):
        name = os.path.basename(path)[len("after-"):-len(".json")]
        model, threads = name.rsplit("-", 1)
        threads = int(threads)
        after = json.load(open(path))
        before_path = os.path.join(folder, f"before-{name}.json")
        before = json.load(open(before_path)) if os.path.exists(before_path) else None
        torch_row = torch_rows.get((model, threads))
        a_pre = phase(after, "prefill")["tokens_per_second"]
        a_dec = phase(after, "decode")["tokens_per_second"]
        b_pre = phase(before, "prefill")["tokens_per_second"] if before else float("nan")
        b_dec = phase(before, "decode")["tokens_per_second"] if before else float("nan")
        t_pre = torch_row["prefill_tokens_per_s"] if torch_row else float("nan")
        t_dec = torch_row["decode_tokens_per_s"] if torch_row else float("nan")
        kernels = f"{before['kernels'] if before else '?'} → {after['kernels']}"
        print(f"| {model} | {threads} | {kernels} | {b_pre:.0f} | {a_pre:.0f} | {t_pre:.0f} | {a_pre / t_pre:.2f}× "
              f"| {a_pre / b_pre:.2f}× | {b_dec:.1f} | {a_dec:.1f} | {t_dec:.1f} "
              f"| {phase(after, 'prefill')['peak_with_mapped_over_floor']:.3f} "
              f"| {phase(after, 'decode')['peak_with_mapped_over_floor']:.3f} |")


if __name__ == "__main__":
    main()
