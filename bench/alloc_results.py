#!/usr/bin/env python3
"""Turns the JSON passes of run_alloc_passes.sh (STEM-<pass>.json) into the
Markdown record: per trace and thread count, each malloc beside nuvec in the
same pass (ratios), nuvec's scaling with threads, and memory()'s cost, each
against its target. Machine facts come from the environment.

Usage: alloc_results.py STEM"""
import json
import os
import sys

PASSES = ["glibc", "glibc-notrim", "jemalloc", "mimalloc"]
TARGET_MEMORY_NS = 50.0
TARGET_SCALING = {8: 6.0, 16: 10.0}


def load(path):
    data = json.load(open(path))
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median":
            rows[b["run_name"]] = b
    return data["context"], rows


def ns(b, key="real_time"):
    return b[key] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]


def pair_ns(b):
    """Wall-clock ns per pair of the total throughput (all threads together)."""
    return 1e9 / b["items_per_second"]


def pairs(rows):
    """{(trace, allocator, threads): median row}"""
    out = {}
    for name, b in rows.items():
        parts = name.split("/")
        if parts[0] == "pair" and len(parts) >= 3:
            out[(parts[1], parts[2], int(b["threads"]))] = b
    return out


def main():
    stem = sys.argv[1]
    passes = {}
    ctx = {}
    for p in PASSES:
        path = "%s-%s.json" % (stem, p)
        if os.path.exists(path):
            ctx, rows = load(path)
            passes[p] = rows
    env = os.environ.get
    if not passes:
        sys.exit("alloc_results.py: no %s-<pass>.json" % stem)
    table = {p: pairs(rows) for p, rows in passes.items()}
    traces = sorted({k[0] for t in table.values() for k in t})
    threads = sorted({k[2] for t in table.values() for k in t})

    out = ["# Allocation micro-benchmarks: allocate+free pairs, nuvec beside glibc, jemalloc, mimalloc", ""]
    out += [
        "What ran: `nuvec_alloc_bench` (bench/alloc_bench.cc, bench/memory_bench.cc), once per malloc",
        "(bench/run_alloc_passes.sh): glibc as it comes, glibc without heap trimming (`GLIBC_TUNABLES`),",
        "jemalloc and mimalloc (Debian's, `LD_PRELOAD`). nuvec runs in every pass beside that malloc, so",
        "each ratio compares two rows of one process.",
        "",
        "- **Traces** (4096 sizes each): `loguniform`, log-uniform in 256 B to 16 MiB, fixed seed;",
        "  `transformer`, the built-in model's prefill and decode requests (128 B to 4.3 MiB,",
        "  bench/transformer_sizes.cc, recorded by bench/record_transformer_sizes.sh), repeated.",
        "- Each thread keeps 16 buffers live in a ring; one iteration frees the oldest and allocates",
        "  the next size (one pair). All threads share ONE nuvec device (`Device::create_cpu()`,",
        "  thread caches on). No memory is touched. `misses`: nuvec's system allocations in the timed loop.",
        "- **ns/pair** is wall-clock time per pair of the total throughput (all threads together:",
        "  1e9 / pairs per second); **scaling** is the pairs per second at N threads over those at 1.",
        "",
        "## Command",
        "",
        "```",
        env("COMMAND", "?"),
        "```",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        "| date | %s |" % env("MACHINE_DATE", "?"),
        "| host | %s |" % ctx.get("host_name", "?"),
        "| nproc | %s |" % env("MACHINE_NPROC", "?"),
        "| CPU | %s (%s MHz reported) |" % (env("MACHINE_CPU", "?"), ctx.get("mhz_per_cpu", "?")),
        "| kernel | %s |" % env("MACHINE_KERNEL", "?"),
        "| C library | %s |" % env("MACHINE_GLIBC", "?"),
        "| compiler | %s |" % env("MACHINE_COMPILER", "?"),
        "| load average at start (last pass) | %s |" % ", ".join("%.2f" % x for x in ctx.get("load_avg", [])),
        "| load average at end | %s |" % env("LOAD_AT_END", "?").replace(" ", ", "),
        "| nuvec commit | %s |" % env("NUVEC_COMMIT", "?"),
        "",
    ]
    for trace in traces:
        out += ["## Trace `%s`: ns/pair (medians), nuvec / that malloc in the same pass" % trace, "",
                "| threads | " + " | ".join("%s | nuvec | ratio" % p for p in passes) + " |",
                "|---:|" + "---:|---:|---:|" * len(passes)]
        for t in threads:
            cells = []
            for p in passes:
                m = table[p].get((trace, "malloc", t))
                n = table[p].get((trace, "nuvec", t))
                if m and n:
                    cells += ["%.1f" % pair_ns(m), "%.1f" % pair_ns(n), "%.2f" % (pair_ns(n) / pair_ns(m))]
                else:
                    cells += ["", "", ""]
            out.append("| %d | %s |" % (t, " | ".join(cells)))
        out.append("")
        out += ["Scaling (pairs/s at N threads / at 1 thread, same pass):", "",
                "| threads | " + " | ".join("%s | nuvec" % p for p in passes) + " |",
                "|---:|" + "---:|---:|" * len(passes)]
        for t in threads:
            cells = []
            for p in passes:
                for alloc in ("malloc", "nuvec"):
                    one = table[p].get((trace, alloc, 1))
                    many = table[p].get((trace, alloc, t))
                    cells.append("%.2f" % (many["items_per_second"] / one["items_per_second"]) if one and many else "")
            out.append("| %d | %s |" % (t, " | ".join(cells)))
        out.append("")

    out += ["## Targets", ""]
    for trace in traces:
        for peer in ("glibc-notrim",) + (("mimalloc",) if trace == "transformer" else ()):
            m = table.get(peer, {}).get((trace, "malloc", 1))
            n = table.get(peer, {}).get((trace, "nuvec", 1))
            if m and n:
                r = pair_ns(n) / pair_ns(m)
                out.append("- %s, 1 thread: nuvec/%s = %.2f (target <= 1.00: %s)" % (
                    trace, peer, r, "met" if r <= 1.0 else "NOT met"))
        for p in passes:
            one = table[p].get((trace, "nuvec", 1))
            two = table[p].get((trace, "nuvec", 2))
            if one and two:
                out.append("- %s, pass %s: nuvec ns/pair at 2 threads %.1f vs 1 thread %.1f (target: no slower: %s)" % (
                    trace, p, pair_ns(two), pair_ns(one), "met" if pair_ns(two) <= pair_ns(one) else "NOT met"))
            for t, goal in TARGET_SCALING.items():
                many = table[p].get((trace, "nuvec", t))
                if one and many:
                    s = many["items_per_second"] / one["items_per_second"]
                    out.append("- %s, pass %s: nuvec scaling at %d threads %.2fx (target >= %.0fx: %s)" % (
                        trace, p, t, s, goal, "met" if s >= goal else "NOT met"))
    for p, rows in passes.items():
        for name, b in sorted(rows.items()):
            if name.startswith("memory_snapshot"):
                m = ns(b)
                out.append("- memory() (%s, pass %s): %.1f ns per call (target < %.0f ns: %s)" % (
                    name.split("/", 1)[1], p, m, TARGET_MEMORY_NS, "met" if m < TARGET_MEMORY_NS else "NOT met"))
    out += ["", "## Every median", "", "| pass | benchmark | threads | ns/pair (throughput) | real ns | CPU ns | misses |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for p, rows in passes.items():
        for name, b in sorted(rows.items()):
            out.append("| %s | %s | %d | %s | %.1f | %.1f | %s |" % (
                p, name, b.get("threads", 1), "%.1f" % pair_ns(b) if "items_per_second" in b else "",
                ns(b), ns(b, "cpu_time"), ("%g" % b["misses"]) if "misses" in b else ""))
    out += ["", "Raw JSON: %s." % ", ".join("`bench/results/%s-%s.json`" % (os.path.basename(stem), p)
                                           for p in passes)]
    print("\n".join(out))


if __name__ == "__main__":
    main()
