#!/usr/bin/env python3
"""PyTorch on nuvec's allocator against PyTorch on its own: time and memory of a 1.1 B-parameter
Llama-architecture model (transformers, random weights from a config, bf16): prefill of 512 tokens,
then greedy generate() of 128 new tokens, batch 1.

Each allocator runs in its own process (the allocator is chosen before CUDA is first used), one
process at a time on GPU 0, alternating: `--rounds` rounds of one process each, torch first in odd
rounds and nuvec first in even ones, so that neither the order nor the moment favours one. (Running
the two at once, one per GPU, proved too noisy: single runs spread from 1.9 to 2.8 s.) Each process
builds the model, runs once to warm up, then `--runs` timed runs; times are medians over all of an
allocator's runs, with each process's median beside them.

Allocators: torch (PyTorch's caching allocator), nuvec (its CUDA arena, the default) and, with
`--allocators torch,nuvec,nuvec_blocks`, nuvec with one cudaMalloc per block (NUVEC_CUDA_ARENA=0).

Memory, over each process's whole life (model build included):
- torch: torch.cuda.max_memory_allocated() and max_memory_reserved();
- nuvec: MemoryStats.peak (the highest `active`) and peak_held (the highest active + cache, sampled
  after every allocation: what nuvec held from the GPU, PyTorch's "reserved"), and peak_committed
  (the most device memory nuvec's backend held at once: 2 MiB granules, shared by small blocks);
- both: NVML's used memory of the process (context, libraries' workspaces and all), polled after
  each phase, highest reading.

Which outputs agree, and where they part (the greedy tokens of random weights sit on near-ties, so
one rounding apart flips a token): a digest of the weights (an exact integer sum of their bits: the
seeded random initialisation), of each run's prefill logits, and each run's 128 tokens are compared
within a process (run against run), across processes of one allocator, and across allocators; the
summary's `agreement` says which comparisons differ, where the first token differs, and what that
points to.

    PYTHONPATH=build/release/python python3 bench/cuda/torch_llama_bench.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from nvml_process import nvml_used  # bench/cuda/nvml_process.py, beside this script

CONFIG = dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
              num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048,
              pad_token_id=0, bos_token_id=1, eos_token_id=2)
PROMPT, NEW_TOKENS = 512, 128


def bits_digest(t) -> int:
    """An exact, order-independent digest of a tensor's bits (an integer sum), computed on its device."""
    import torch

    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return int(t.detach().contiguous().view(width).sum(dtype=torch.int64).item())


def child(allocator: str, gpu: int, runs: int, deterministic: bool) -> dict:
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # CUDA's numbering = NVML's
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    if allocator.startswith("nuvec"):
        os.environ["NUVEC_CUDA_ARENA"] = "0" if allocator == "nuvec_blocks" else "1"
        # The allocator's share of the time (allocator_share_of_generate); costs four clock reads a pair.
        os.environ["NUVEC_TORCH_CALL_TIMES"] = "1"
        import nuvec.torch as nuvec_torch

        nuvec_torch.install()  # before anything touches CUDA memory
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    nvml_peak = 0

    def sample() -> None:
        nonlocal nvml_peak
        used = nvml_used(gpu)
        if used is not None:
            nvml_peak = max(nvml_peak, used)

    if deterministic:
        torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    config = LlamaConfig(**CONFIG)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).eval()
    torch.set_default_dtype(torch.float32)
    torch.cuda.synchronize()
    sample()
    params = sum(p.numel() for p in model.parameters())
    prompt = torch.randint(3, config.vocab_size, (1, PROMPT), generator=torch.Generator().manual_seed(1)).cuda()
    mask = torch.ones_like(prompt)

    prefill, generate, tokens, logits_digests = [], [], [], []
    warm = None  # nuvec: calls and system allocations once warmed up
    with torch.no_grad():
        for run in range(runs + 1):  # run 0 warms up
            if run == 1 and allocator != "torch":
                warm = dict(nuvec_torch.call_times(), system_allocations=nuvec_torch.stats()["system_allocations"])
            torch.cuda.synchronize()
            start = time.perf_counter()
            logits = model(prompt, attention_mask=mask).logits
            torch.cuda.synchronize()
            p = time.perf_counter() - start
            logits_digests.append(bits_digest(logits))  # a reduction: no tensor of the logits' size
            del logits
            sample()
            start = time.perf_counter()
            out = model.generate(prompt, attention_mask=mask, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                 do_sample=False)
            torch.cuda.synchronize()
            g = time.perf_counter() - start
            sample()
            if run > 0:
                prefill.append(p)
                generate.append(g)
            tokens.append(out[0, PROMPT:].tolist())
            del out
    result = {"allocator": allocator, "gpu": gpu, "parameters": params, "prefill_s": prefill, "generate_s": generate,
              "tokens": tokens, "prefill_logits_digests": logits_digests, "nvml_peak_used": nvml_peak or None}
    if allocator != "torch":
        stats = nuvec_torch.stats()
        result.update(peak_allocated=stats["peak"], peak_reserved=stats["peak_held"],
                      peak_committed=stats["peak_committed"], stats=stats)
        # What the timed runs spent in the allocator, per run.
        end = dict(nuvec_torch.call_times(), system_allocations=stats["system_allocations"])
        result["allocator_per_timed_run"] = {k: (end[k] - warm[k]) / runs for k in end}
        result["allocator_share_of_generate"] = (
            (end["malloc_ns"] + end["free_ns"] - warm["malloc_ns"] - warm["free_ns"]) / 1e9 / sum(generate + prefill))
    else:
        result.update(peak_allocated=torch.cuda.max_memory_allocated(), peak_reserved=torch.cuda.max_memory_reserved())
    # After every figure is read: the digest's reductions allocate a little.
    result["weights_digest"] = sum(bits_digest(p) for p in model.parameters())
    return result


def launch(allocator: str, gpu: int, runs: int, deterministic: bool) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "--child", allocator, "--gpu", str(gpu), "--runs", str(runs),
                             *(["--deterministic"] if deterministic else [])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def collect(p: subprocess.Popen, what: str) -> dict:
    out, err = p.communicate()
    if p.returncode != 0:
        raise SystemExit(f"{what} failed (exit {p.returncode}):\n{err[-4000:]}")
    return json.loads(out.strip().splitlines()[-1])


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first position (0 = the first new token) where two token lists differ, or None."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None if len(a) == len(b) else min(len(a), len(b)))


def agreement(results: list[dict], allocators: list[str]) -> dict:
    """Which outputs agree: within each process (run against run), across the processes of each allocator,
    across allocators; with the first differing token and what the digests say about where it starts."""
    out: dict = {"weights_identical_across_processes": len({r["weights_digest"] for r in results}) == 1}
    comparisons = []  # (what, identical, first differing token, prefill logits identical)
    for r in results:
        runs = r["tokens"]
        same = all(t == runs[0] for t in runs)
        comparisons.append((f"{r['allocator']} process, run against run", same,
                            None if same else min(d for t in runs[1:] if (d := first_difference(runs[0], t)) is not None),
                            len(set(r["prefill_logits_digests"])) == 1))
    for allocator in allocators:
        mine = [r for r in results if r["allocator"] == allocator]
        if len(mine) < 2:
            continue
        a, b = mine[0], mine[1]
        d = first_difference(a["tokens"][0], b["tokens"][0])
        comparisons.append((f"{allocator} against {allocator}, two processes", d is None, d,
                            a["prefill_logits_digests"][0] == b["prefill_logits_digests"][0]))
    base = next(r for r in results if r["allocator"] == allocators[0])
    for allocator in allocators[1:]:
        other = next(r for r in results if r["allocator"] == allocator)
        d = first_difference(base["tokens"][0], other["tokens"][0])
        comparisons.append((f"{allocators[0]} against {allocator}", d is None, d,
                            base["prefill_logits_digests"][0] == other["prefill_logits_digests"][0]))
    out["comparisons"] = [{"what": w, "tokens_identical": same, "first_differing_token": d,
                           "prefill_logits_identical": logits} for w, same, d, logits in comparisons]
    out["all_tokens_identical"] = all(c[1] for c in comparisons)
    findings = []
    if not out["weights_identical_across_processes"]:
        findings.append("the weights differ between processes: the seeded initialisation is not reproducible here, "
                        "so no output comparison across processes means anything")
    for w, same, d, logits in comparisons:
        if same and logits:
            continue
        where = "the prefill logits already differ (bits), so the forward pass itself computed differently"             if not logits else f"the prefill logits are identical bit for bit, so it begins in decode (token {d})"
        findings.append(f"{w}: {'tokens differ' if not same else 'tokens agree'}; {where}")
    if not findings:
        findings.append("every comparison agrees: weights, prefill logits and tokens")
    torch_itself = [c for c in comparisons if c[0].startswith("torch process") or c[0] == "torch against torch, two processes"]
    if out["weights_identical_across_processes"] and any(not c[1] for c in torch_itself):
        findings.append(
            "PyTorch's own allocator already differs from itself (run against run in one process, or process "
            "against process) from the same weights and bit-identical prefill logits: decode is not deterministic "
            "without torch.use_deterministic_algorithms, whichever allocator serves it, so a difference against "
            "nuvec says nothing about nuvec; --deterministic (as tests/cuda/torch_llama_test.py) compares outputs")
    out["findings"] = findings
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="timed runs per process (after one warm-up)")
    parser.add_argument("--rounds", type=int, default=2, help="processes per allocator, alternating")
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--allocators", default="torch,nuvec", help="comma-separated: torch, nuvec, nuvec_blocks")
    parser.add_argument("--deterministic", action="store_true",
                        help="torch.use_deterministic_algorithms(True) and CUBLAS_WORKSPACE_CONFIG=:4096:8 in every "
                             "process (as tests/cuda/torch_llama_test.py runs)")
    parser.add_argument("--child", choices=["torch", "nuvec", "nuvec_blocks"], help=argparse.SUPPRESS)
    parser.add_argument("--gpu", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.gpu, args.runs, args.deterministic)))
        return 0

    allocators = args.allocators.split(",")
    results: list[dict] = []
    for round_ in range(args.rounds):
        order = allocators if round_ % 2 == 0 else allocators[::-1]
        for allocator in order:
            results.append(collect(launch(allocator, 0, args.runs, args.deterministic), allocator))

    summary: dict = {"deterministic": args.deterministic, "config": CONFIG, "prompt": PROMPT, "new_tokens": NEW_TOKENS, "rounds": args.rounds,
                     "parameters": results[0]["parameters"], "processes": results}
    for allocator in allocators:
        mine = [r for r in results if r["allocator"] == allocator]
        prefill = [t for r in mine for t in r["prefill_s"]]
        generate = [t for r in mine for t in r["generate_s"]]
        nvml = [r["nvml_peak_used"] for r in mine if r["nvml_peak_used"]]
        summary[allocator] = {
            "prefill_s_median": statistics.median(prefill),
            "generate_s_median": statistics.median(generate),
            "decode_ms_per_token_median": 1000 * (statistics.median(generate) - statistics.median(prefill))
            / (NEW_TOKENS - 1),
            "per_process_generate_medians": [statistics.median(r["generate_s"]) for r in mine],
            "peak_allocated": max(r["peak_allocated"] for r in mine),
            "peak_reserved": max(r["peak_reserved"] for r in mine),
            "nvml_peak_used": max(nvml) if nvml else None,
        }
        if allocator != "torch":
            summary[allocator]["peak_committed"] = max(r["peak_committed"] for r in mine)
            summary[allocator]["allocator_per_timed_run"] = [r["allocator_per_timed_run"] for r in mine]
            summary[allocator]["allocator_share_of_time"] = [r["allocator_share_of_generate"] for r in mine]
    t = summary["torch"]
    for allocator in (a for a in allocators if a != "torch"):
        n = summary[allocator]
        # Rounds are interleaved: each round's processes ran back to back, so the ratio of their medians
        # within a round is the least exposed to the machine's drift.
        per_round = [statistics.median(n_r["generate_s"]) / statistics.median(t_r["generate_s"])
                     for t_r, n_r in zip([r for r in results if r["allocator"] == "torch"],
                                         [r for r in results if r["allocator"] == allocator])]
        summary[f"{allocator}_over_torch"] = {
            "prefill": n["prefill_s_median"] / t["prefill_s_median"],
            "generate": n["generate_s_median"] / t["generate_s_median"],
            "generate_per_round": per_round,
            "generate_median_of_rounds": statistics.median(per_round),
            "peak_allocated": n["peak_allocated"] / t["peak_allocated"],
            "peak_reserved": n["peak_reserved"] / t["peak_reserved"],
            "peak_committed_over_torch_reserved": n["peak_committed"] / t["peak_reserved"],
            "nvml_peak_used": (n["nvml_peak_used"] / t["nvml_peak_used"])
            if n["nvml_peak_used"] and t["nvml_peak_used"] else None,
        }
    summary["agreement"] = agreement(results, allocators)
    summary["tokens_identical"] = summary["agreement"]["all_tokens_identical"]
    for r in results:
        r["tokens_last_run"] = r.pop("tokens")[-1]
    text = json.dumps(summary, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    shown = ["parameters", *allocators, *(f"{a}_over_torch" for a in allocators if a != "torch"), "agreement"]
    print(json.dumps({k: summary[k] for k in shown}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
