#!/usr/bin/env python3
"""Runs the CPU benchmarks of two builds side by side in one run, alternating
which goes first each round, and prints a Markdown table of medians and
after/before ratios: the allocate+free pair and memory() (nuvec_alloc_bench),
checkpoint load (nuvec_checkpoint_load_bench), the GGUF and npy read path
(nuvec_loader_read_bench), and the LM's load, prefill and decode (nuvec
profile on the built-in model).

Usage: bench/before_after.py BEFORE_BUILD_DIR AFTER_BUILD_DIR [--rounds N]
                             [--only alloc,checkpoint,loaders,lm]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
from collections import defaultdict


def alloc_bench(build):
    out = subprocess.run([f"{build}/bench/nuvec_alloc_bench", "--benchmark_filter=pair/nuvec|memory_snapshot",
                          "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=true",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    rows = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            rows[f"{b['run_name']} (ns)"] = b["real_time"]
    return rows


def checkpoint_bench(build, layers):
    out = subprocess.run([f"{build}/bench/nuvec_checkpoint_load_bench", "--dir", "build/bench-data", "--layers",
                          str(layers), "--repetitions", "3"], check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\| (aligned: load_safetensors[^|]*|unaligned: load_safetensors[^|]*) \| ([0-9.]+) \|", line)
        if m:
            rows[f"checkpoint {layers} layers, {m.group(1).strip()} (ms)"] = float(m.group(2))
    return rows


def loader_bench(build):
    out = subprocess.run([f"{build}/bench/nuvec_loader_read_bench", "--dir", "build/bench-data", "--repetitions", "5"],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\| (load_(?:gguf|npy)[^|]*) \| ([0-9.]+) \|", line)
        if m:
            rows[f"{m.group(1).strip()} (ms)"] = float(m.group(2))
    return rows


def profile(build):
    out = subprocess.run([f"{build}/tools/nuvec", "profile", "--prompt-len", "128", "--max-new", "32", "--threads",
                          "2", "--json"], check=True, capture_output=True, text=True).stdout
    rows = {}
    for p in json.loads(out)["phases"]:
        if p["phase"] == "load":
            rows["LM load (ms)"] = p["seconds"] * 1e3
        else:
            rows[f"LM {p['phase']} (tokens/s, higher is better)"] = p["tokens_per_second"]
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--only", default="alloc,checkpoint,loaders,lm",
                        help="which benchmarks, comma-separated (default: all)")
    args = parser.parse_args()
    known = {"alloc": alloc_bench, "checkpoint": lambda b: checkpoint_bench(b, args.layers), "loaders": loader_bench,
             "lm": profile}
    chosen = args.only.split(",")
    unknown = [c for c in chosen if c not in known]
    if unknown:
        parser.error(f"--only: unknown benchmark(s) {unknown}; choose from {sorted(known)}")
    samples = {"before": defaultdict(list), "after": defaultdict(list)}
    for r in range(args.rounds):
        order = [("before", args.before), ("after", args.after)]
        if r % 2 == 1:
            order.reverse()
        for bench in (known[c] for c in chosen):
            for name, build in order:
                for key, value in bench(build).items():
                    samples[name][key].append(value)
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    print("| benchmark | before (median) | after (median) | after / before | samples each |")
    print("|---|---:|---:|---:|---:|")
    for key in samples["before"]:
        b = statistics.median(samples["before"][key])
        a = statistics.median(samples["after"][key])
        print(f"| {key} | {b:.2f} | {a:.2f} | {a / b:.3f} | {len(samples['after'][key])} |")
    print()
    print("samples, in run order:")
    for key in samples["before"]:
        print(f"- {key}: before {[round(x, 2) for x in samples['before'][key]]}, "
              f"after {[round(x, 2) for x in samples['after'][key]]}")


if __name__ == "__main__":
    main()
