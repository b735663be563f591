#!/usr/bin/env python3
"""Tabulates what bench/lm/run_amx_table.sh wrote into one folder.

Reads lmrt-{build}-{model}-{threads}.json (nuvec_lm_runtime_bench),
torch-{model}.jsonl and torch-mha-{prompt}.jsonl (torch_prefill.py), and
profile-{build}-{model}-{prompt}-{threads}.json (`nuvec profile --json`),
and prints two Markdown tables: the issue's (warm prefill of 512 tokens and
decode, nuvec against PyTorch, the products' share of the prefill's FLOP
rate, peak_with_mapped / floor at 16 threads) and the long prompts without
GQA (one prefill each: nuvec before and after, PyTorch).
Usage: amx_table.py FOLDER
"""
import json
import os
import sys

NAN = float("nan")


def load(folder, name):
    path = os.path.join(folder, name)
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    try:
        return json.load(open(path))
    except ValueError:
        return None


def torch_rows(folder, name):
    rows = {}
    path = os.path.join(folder, name)
    if os.path.exists(path):
        for line in open(path):
            if line.startswith("{"):
                j = json.loads(line)
                rows[j["threads"]] = j
    return rows


def prefill_rate(profile):
    if not profile:
        return NAN
    return next((p["tokens_per_second"] for p in profile["phases"] if p["phase"] == "prefill"), NAN)


def main():
    folder = sys.argv[1]
    print("| model | threads | kernels | prefill tok/s: nuvec | PyTorch | nuvec / PyTorch "
          "| products TFLOP/s in prefill | decode tok/s: nuvec | PyTorch | peak_with_mapped / floor, prefill |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for model in ("builtin", "llama1b"):
        torch = torch_rows(folder, f"torch-{model}.jsonl")
        profile = load(folder, f"profile-after-{model}-512-16.json")
        ratio = {p["phase"]: p["peak_with_mapped_over_floor"] for p in profile["phases"]} if profile else {}
        for threads in (4, 16):
            r = load(folder, f"lmrt-after-{model}-{threads}.json")
            if not r:
                continue
            t = torch.get(threads, {})
            tp, td = t.get("prefill_tokens_per_s", NAN), t.get("decode_tokens_per_s", NAN)
            pa, da = r["prefill"]["tokens_per_second"], r["decode"]["tokens_per_second"]
            products = r["prefill"]["linear_flops"] / r["prefill"]["seconds"] / 1e12
            print(f"| {model} | {threads} | {r['kernels']} | {pa:.0f} | {tp:.0f} | {pa / tp:.2f}× | {products:.2f} "
                  f"| {da:.1f} | {td:.1f} | {ratio.get('prefill', NAN) if threads == 16 else NAN:.3f} |")

    print("\n| prompt (MHA, 16 threads) | nuvec before, prefill tok/s | nuvec after | PyTorch | after / before "
          "| after / PyTorch | PyTorch's attention |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for prompt in (2048, 8192):
        before = prefill_rate(load(folder, f"profile-before-mha-{prompt}-16.json"))
        after = prefill_rate(load(folder, f"profile-after-mha-{prompt}-16.json"))
        t = torch_rows(folder, f"torch-mha-{prompt}.jsonl").get(16, {})
        tp = t.get("prefill_tokens_per_s", NAN)
        if after != after and tp != tp:
            continue
        print(f"| {prompt} | {before:.0f} | {after:.0f} | {tp:.0f} | {after / before:.2f}× | {after / tp:.2f}× "
              f"| {t.get('attention')} |")


if __name__ == "__main__":
    main()
