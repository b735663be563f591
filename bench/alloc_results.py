#!/usr/bin/env python3
"""Turns the two JSON outputs of run_alloc_bench.sh into the Markdown record
(medians, CVs, nuvec/glibc ratios). Machine facts come from the environment."""
import json
import os
import sys

TARGET_RATIO = 1.25
TARGET_MEMORY_NS = 50.0


def ns(b, key="real_time"):
    return b[key] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]


def aggregates(path):
    data = json.load(open(path))
    by = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate":
            by.setdefault(b["run_name"], {})[b["aggregate_name"]] = b
    return data["context"], by


def median_table(by):
    out = ["| benchmark | threads | ns/pair or /call (real) | CPU ns | items/s | misses | CV (real) |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for name, agg in sorted(by.items()):
        m, cv = agg["median"], agg.get("cv")
        out.append("| %s | %d | %.1f | %.1f | %.3g | %s | %s |" % (
            name, m["threads"], ns(m), ns(m, "cpu_time"), m.get("items_per_second", 0),
            ("%g" % m["misses"]) if "misses" in m else "",
            ("%.1f%%" % (100 * cv["real_time"])) if cv else ""))
    return out


def pairs(by):
    """{threads: (glibc median ns, nuvec median ns)}"""
    found = {}
    for name, agg in by.items():
        parts = name.split("/")
        if parts[0] == "pair":
            m = agg["median"]
            found.setdefault(m["threads"], {})[parts[1]] = ns(m)
    return {t: (v["glibc"], v["nuvec"]) for t, v in sorted(found.items()) if "glibc" in v and "nuvec" in v}


def memory_ns(by):
    for name, agg in by.items():
        if name.startswith("memory_snapshot"):
            return ns(agg["median"])
    return None


def main():
    default_path, notrim_path = sys.argv[1], sys.argv[2]
    ctx, default = aggregates(default_path)
    _, notrim = aggregates(notrim_path)
    env = os.environ.get
    reps = next(iter(next(iter(default.values())).values())).get("repetitions", "?")

    out = ["# Allocation micro-benchmarks: allocate+free pairs, nuvec vs glibc", ""]
    out += [
        "What ran: `nuvec_alloc_bench` (bench/alloc_bench.cc, bench/memory_bench.cc), twice.",
        "",
        "- **pair/glibc, pair/nuvec:** one trace of 4096 sizes, log-uniform in 256 B to 16 MiB,",
        "  fixed seed. Each thread keeps 16 buffers live in a ring; one iteration frees the oldest",
        "  and allocates the next size (one allocate+free pair). glibc `malloc`/`free` and nuvec",
        "  (`Device::new_buffer` / `Buffer::reset`) replay the identical trace in the same run;",
        "  with 2 threads both share ONE nuvec device. No memory is touched. nuvec is warmed until",
        "  its cache serves the trace; `misses` = its system allocations during the timed loop.",
        "- Time is wall-clock per pair. With 2 threads it is the wall time divided by the pairs",
        "  of both threads (inverse throughput); each thread's own time per pair is twice that.",
        "- **memory_snapshot/nuvec:** one `Device::memory()` call.",
        "- Pass 1 uses glibc as it comes. Pass 2 turns glibc's heap trimming off",
        "  (`GLIBC_TUNABLES`, see the command), a harder baseline: on this trace default glibc",
        "  spends most of its time in `brk` calls, growing and trimming the heap.",
        "",
        "## Commands (%s repetitions each, medians)" % reps,
        "",
        "```",
        env("COMMAND_DEFAULT", "?"),
        env("COMMAND_NOTRIM", "?"),
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
        "| Google Benchmark | %s library build |" % ctx.get("library_build_type", "?"),
        "| load average at start | %s |" % ", ".join("%.2f" % x for x in ctx.get("load_avg", [])),
        "| load average at end | %s |" % env("LOAD_AT_END", "?").replace(" ", ", "),
        "| nuvec commit | %s |" % env("NUVEC_COMMIT", "?"),
        "",
        "## Ratios nuvec / glibc (medians; target: pair <= %.2fx glibc)" % TARGET_RATIO,
        "",
        "| threads | glibc | ns/pair glibc | ns/pair nuvec | nuvec/glibc | target met |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for label, by in (("default", default), ("no trim", notrim)):
        for t, (g, n) in pairs(by).items():
            r = n / g
            out.append("| %d | %s | %.1f | %.1f | %.2f | %s |" % (
                t, label, g, n, r, "yes" if r <= TARGET_RATIO else "no"))
    out.append("")
    for label, by in (("pass 1", default), ("pass 2", notrim)):
        m = memory_ns(by)
        if m is not None:
            out.append("memory() (%s): %.1f ns per call; target < %.0f ns: %s." % (
                label, m, TARGET_MEMORY_NS, "met" if m < TARGET_MEMORY_NS else "NOT met"))
    out += ["", "## Pass 1: glibc defaults", ""] + median_table(default)
    out += ["", "## Pass 2: glibc without heap trimming", ""] + median_table(notrim)
    out += ["", "Raw JSON: `bench/results/%s`, `bench/results/%s`." % (
        os.path.basename(default_path), os.path.basename(notrim_path))]
    print("\n".join(out))


if __name__ == "__main__":
    main()
