#!/usr/bin/env python3
"""Turns the LM runtime benchmark's raw JSON (two `nuvec profile --json`
reports and one nuvec_lm_runtime_bench report) into the markdown record of
bench/results/<date>-lm-runtime.md, each figure beside its target."""
import argparse
import datetime
import json

MiB = 1 << 20


def mib(b):
    return f"{b / MiB:.1f} MiB"


def yes(ok):
    return "yes" if ok else "**no**"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile512")
    ap.add_argument("profile8192")
    ap.add_argument("speed")
    ap.add_argument("--json", required=True)
    ap.add_argument("--machine", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--load", required=True)
    ap.add_argument("--commands", nargs="+", required=True)
    a = ap.parse_args()
    profiles = {512: json.load(open(a.profile512)), 8192: json.load(open(a.profile8192))}
    speed = json.load(open(a.speed))
    json.dump({"profiles": profiles, "speed": speed}, open(a.json, "w"), indent=2)

    p = lambda n, phase: next(x for x in profiles[n]["phases"] if x["phase"] == phase)
    out = []
    w = out.append
    w("# LM runtime: memory and speed of the built-in model")
    w("")
    w("What ran: bench/lm_runtime/run_lm_runtime_bench.sh on the built-in model (`nuvec demo-model`: "
      "Llama architecture, bf16, 12 layers, hidden 1024, 16/4 heads, vocabulary 32000, context 16384). "
      "Memory: `nuvec profile`, each phase in a fresh process (load, reset_peak(), run the phase, report). "
      "Speed: nuvec_lm_runtime_bench, medians of its repetitions, each repetition measuring the bound "
      "(read bandwidth with all threads, linear()'s GEMM rate) beside the runtime.")
    w("")
    w("```")
    for c in a.commands:
        w(c)
    w("```")
    w("")
    w("| | |")
    w("|---|---|")
    w(f"| date | {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC |")
    w(f"| machine | {a.machine} |")
    w(f"| load average (start -> end) | {a.load} |")
    w(f"| kernels | {speed['kernels']}, {speed['threads']} threads |")
    w(f"| nuvec commit | {a.commit} (plus the working tree) |")
    w("")
    w("## Memory")
    w("")
    w("| prompt | phase | time | tokens/s | active | peak | mapped | peak_with_mapped | VmHWM | floor | "
      "peak_with_mapped / floor | target | met |")
    w("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for n in (512, 8192):
        for phase in ("load", "prefill", "decode"):
            r = p(n, phase)
            s = r["stats"]
            ratio = r["peak_with_mapped_over_floor"]
            target = "≤ 1.10" if phase != "load" else ""
            met = yes(ratio <= 1.10) if phase != "load" else ""
            tps = f"{r['tokens_per_second']:.1f}" if r["tokens"] else "-"
            w(f"| {n} | {phase} | {r['seconds']:.3f} s | {tps} | {mib(s['active'])} | {mib(s['peak'])} | "
              f"{mib(s['mapped'])} | {mib(s['peak_with_mapped'])} | {mib(r['os']['vm_hwm'])} | "
              f"{mib(r['floor']['bytes'])} | {ratio:.3f} | {target} | {met} |")
    w("")
    for n in (512, 8192):
        pre, dec = p(n, "prefill"), p(n, "decode")
        w(f"- Floor at prompt {n}: weights {mib(pre['floor']['weights'])} + KV cache "
          f"{mib(pre['floor']['kv_cache'])} + largest intermediate: prefill {pre['floor']['intermediate_name']} "
          f"({mib(pre['floor']['intermediate'])}), decode {dec['floor']['intermediate_name']} "
          f"({mib(dec['floor']['intermediate'])}).")
    for n in (512, 8192):
        for note in profiles[n]["os_disagreements"]:
            w(f"- OS check, prompt {n}: {note}")
    w("")
    load = p(512, "load")
    weights = load["floor"]["weights"]
    private = max(0, load["os"]["private_dirty_added"]) + max(0, load["os"]["private_clean_added"])
    dec = [p(n, "decode") for n in (512, 8192)]
    w("| target | figure | met |")
    w("|---|---|---|")
    w(f"| zero system allocations (cache misses) in steady decode (after its first step) | "
      f"{dec[0]['steady_system_allocations']} over {dec[0]['tokens'] - 1} steps (prompt 512), "
      f"{dec[1]['steady_system_allocations']} over {dec[1]['tokens'] - 1} steps (prompt 8192) | "
      f"{yes(dec[0]['steady_system_allocations'] == 0 and dec[1]['steady_system_allocations'] == 0)} |")
    w(f"| loading adds < 2% of the weight bytes ({mib(weights)}) to private resident memory | "
      f"{private / 1024:.0f} KiB = {100 * private / weights:.3f}% (Private_Clean "
      f"{load['os']['private_clean_added'] / 1024:.0f} KiB + Private_Dirty "
      f"{load['os']['private_dirty_added'] / 1024:.0f} KiB added by load_model, smaps_rollup) | "
      f"{yes(private < 0.02 * weights)} |")
    pre512 = p(512, "prefill")
    w(f"| (for scale) private memory a prefill adds once it has read every weight | Private_Clean "
      f"{pre512['os']['private_clean_added'] / MiB:.1f} MiB (mapped file pages this process alone maps: "
      f"page cache, not copies), Private_Dirty {pre512['os']['private_dirty_added'] / MiB:.1f} MiB "
      f"(activations and KV cache as written) | |")
    w("")
    w("## Speed")
    w("")
    d, f = speed["decode"], speed["prefill"]
    GB = 1e9
    w("| figure | value | bound | fraction | target | met |")
    w("|---|---:|---:|---:|---|---|")
    w(f"| decode tokens/s (after a 16-token prompt, {d['steps']} steps) | {d['tokens_per_second']:.1f} | "
      f"{d['bound_tokens_per_second']:.1f} ({speed['read_bandwidth_all_threads'] / GB:.1f} GB/s with "
      f"{speed['threads']} threads / {speed['weight_bytes_per_token'] / MiB:.1f} MiB per token) | "
      f"{d['fraction_of_bound']:.2f} | ≥ 0.80 | {yes(d['fraction_of_bound'] >= 0.8)} |")
    w(f"| prefill GFLOP/s ({f['tokens']} tokens, {f['seconds']:.3f} s) | {f['flops_per_second'] / GB:.1f} | "
      f"{f['gemm_flops_per_second'] / GB:.1f} (linear() {f['gemm_shape']}, bf16) | {f['fraction_of_gemm']:.2f} | "
      f"≥ 0.70 | {yes(f['fraction_of_gemm'] >= 0.7)} |")
    w("")
    w(f"Read bandwidth with one thread: {speed['read_bandwidth_one_thread'] / GB:.1f} GB/s. Decode reads "
      f"{d['achieved_bytes_per_second'] / GB:.1f} GB/s of weights. Prefill FLOPs count every layer's linear "
      f"layers for every token ({f['linear_flops'] / 1e9:.1f} GFLOP), the LM head for the last, and attention "
      f"({(f['flops'] - f['linear_flops']) / 1e9:.1f} GFLOP, 2 per multiply-add, causal triangle). "
      f"Runs: decode {', '.join(f'{x:.1f}' for x in d['runs'])} tokens/s; prefill "
      f"{', '.join(f'{x:.3f}' for x in f['runs'])} s; bandwidth "
      f"{', '.join(f'{x / GB:.1f}' for x in speed['bandwidth_runs'])} GB/s; GEMM "
      f"{', '.join(f'{x / GB:.0f}' for x in speed['gemm_runs'])} GFLOP/s.")
    print("\n".join(out))


if __name__ == "__main__":
    main()
