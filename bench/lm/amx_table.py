#!/usr/bin/env python3
"""Tabulates what bench/lm/run_amx_table.sh wrote into one folder.

Reads lmrt-{before,after}-{model}-{threads}-{round}.json
(nuvec_lm_runtime_bench), torch-{model}.jsonl (torch_prefill.py) and
profile-{model}.json (`nuvec profile --json`), and prints a Markdown table:
warm prefill and decode tokens/s of nuvec before and after (medians over the
rounds, each round itself a median) and of PyTorch, their ratios, the
products' share of the prefill's FLOP rate, and peak_with_mapped / floor of
the after build's prefill and decode.
Usage: amx_table.py FOLDER
"""
import glob
import json
import os
import sys


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def runs(folder, build, model, threads):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(folder, f"lmrt-{build}-{model}-{threads}-*.json")))
            if os.path.getsize(p) > 0]


def main():
    folder = sys.argv[1]
    print("| model | threads | kernels | prefill tok/s: before | after | PyTorch | after / PyTorch | after / before "
          "| products TFLOP/s in prefill, after | decode tok/s: before | after | PyTorch | peak_with_mapped / floor: prefill | decode |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model in ("builtin", "llama1b"):
        torch = {}
        path = os.path.join(folder, f"torch-{model}.jsonl")
        if os.path.exists(path):
            for line in open(path):
                if line.startswith("{"):
                    j = json.loads(line)
                    torch[j["threads"]] = j
        ratio = {}
        path = os.path.join(folder, f"profile-{model}.json")
        if os.path.exists(path) and os.path.getsize(path) > 0:
            for p in json.load(open(path))["phases"]:
                ratio[p["phase"]] = p["peak_with_mapped_over_floor"]
        for threads in (4, 16):
            before, after = runs(folder, "before", model, threads), runs(folder, "after", model, threads)
            if not before or not after:
                continue
            pb = median([r["prefill"]["tokens_per_second"] for r in before])
            pa = median([r["prefill"]["tokens_per_second"] for r in after])
            db = median([r["decode"]["tokens_per_second"] for r in before])
            da = median([r["decode"]["tokens_per_second"] for r in after])
            products = median([r["prefill"]["linear_flops"] / r["prefill"]["seconds"] for r in after]) / 1e12
            t = torch.get(threads, {})
            tp, td = t.get("prefill_tokens_per_s", float("nan")), t.get("decode_tokens_per_s", float("nan"))
            kernels = f"{before[0]['kernels']} → {after[0]['kernels']}"
            print(f"| {model} | {threads} | {kernels} | {pb:.0f} | {pa:.0f} | {tp:.0f} | {pa / tp:.2f}× | {pa / pb:.2f}× "
                  f"| {products:.2f} | {db:.1f} | {da:.1f} | {td:.1f} "
                  f"| {ratio.get('prefill', float('nan')):.3f} | {ratio.get('decode', float('nan')):.3f} |")
    print("\n(nuvec: median of the rounds' medians; rounds, prefill tok/s, after:",
          {f"{m}-{t}": [round(r["prefill"]["tokens_per_second"]) for r in runs(folder, "after", m, t)]
           for m in ("builtin", "llama1b") for t in (4, 16)}, ")")


if __name__ == "__main__":
    main()
