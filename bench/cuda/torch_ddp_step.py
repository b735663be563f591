#!/usr/bin/env python3
"""DDP training steps of a transformers Llama-architecture model (random weights) with one process
per GPU (torch.multiprocessing, NCCL), on nuvec's allocator and on PyTorch's own, side by side;
every rank's figures gathered to rank 0 and reported.

Each allocator runs as its own set of fresh processes (the allocator is chosen before CUDA is first
used): `--world` processes (default: every GPU), rank r on GPU r, each building the same model
(seeded), wrapping it in DistributedDataParallel, and running `--steps` steps of AdamW on its own
batch (seeded by rank): forward, loss, backward (DDP all-reduces the gradients over NCCL), step:
`--warmup` steps (DDP rebuilds its buckets in the second), then the peaks are reset and `--steps`
measured steps run (SETTLE_S below says why the warm-up ends as it does). Per rank, after the steps:
- nuvec: its device's MemoryStats (peak, peak_held, committed, ...: `nuvec.torch.stats(r)`);
- torch: torch.cuda.max_memory_allocated() and max_memory_reserved();
- both: the losses of every step, and NVML's used memory of the process on its GPU (the CUDA
  context, NCCL's own buffers and the allocator's memory together).
Rank 0 gathers every rank's record (torch.distributed.all_gather_object) and writes them out.

NCCL allocates its communication buffers itself (cudaMalloc / cuMem calls inside NCCL), not through
PyTorch's allocator, so they are outside nuvec's statistics under either allocator; NVML's figure
includes them. NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and the variables below), in every
child process too (they inherit the environment).

    PYTHONPATH=build/release/python python3 bench/cuda/torch_ddp_step.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time

from nvml_process import nvml_used  # bench/cuda/nvml_process.py, beside this script

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
CONFIG = dict(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
              num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=1024,
              pad_token_id=0, bos_token_id=1, eos_token_id=2)


def phase_figures(allocator: str, rank: int) -> dict:
    """What the allocator holds now and its peaks so far (running, never reset): live bytes and
    live + cached bytes."""
    import torch

    if allocator == "nuvec":
        import nuvec.torch as nt

        s = nt.stats(rank)
        return {"live": s["active"], "peak": s["peak"], "held": s["active"] + s["cache"], "peak_held": s["peak_held"]}
    return {"live": torch.cuda.memory_allocated(rank), "peak": torch.cuda.max_memory_allocated(rank),
            "held": torch.cuda.memory_reserved(rank), "peak_held": torch.cuda.max_memory_reserved(rank)}


# PyTorch's NCCL process group keeps the tensors of an asynchronous collective (DDP's gradient
# buckets) alive until its watchdog thread, polling every 100 ms, has seen the collective complete
# and a later call of the process group (on whichever thread makes it) drops them. In the second
# step DDP rebuilds its buckets, so the first step's 596 MiB bucket is garbage from then on, but it
# is freed at the start of step 2's forward, of its backward (the autograd thread's all-reduce) or
# of step 3, by the poll's phase: the peak moved by that bucket under either allocator (nuvec's in
# 3 of 5 runs, PyTorch's in 1 of 5: tests/cuda/results/2026-12-03-h200-ddp-peaks.md). So the
# warm-up steps end with the work done, longer than a poll waited, and a barrier (a process-group
# call that drops what the watchdog released), and the peaks count from there.
SETTLE_S = 0.3


def worker(rank: int, world: int, allocator: str, steps: int, batch: int, seq: int, out_path: str,
           trace_dir: str | None = None, warmup: int = 2) -> None:
    if allocator == "nuvec":
        if trace_dir:  # read when the device is made, at the first allocation
            os.environ["NUVEC_TRACE"] = os.path.join(trace_dir, f"nuvec-rank{rank}.jsonl")
        import nuvec
        import nuvec.torch as nt

        nt.install()  # before anything touches CUDA in this process
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    # After each phase: its name, and what the allocator holds and has peaked at so far (a mark in
    # nuvec's trace at its start), so that two runs can be compared phase by phase.
    phases: list = []

    def start(name: str) -> None:
        if allocator == "nuvec":
            nuvec.cuda(rank).mark(name)

    def done(name: str) -> None:
        phases.append({"phase": name, **phase_figures(allocator, rank)})

    torch.manual_seed(0)
    start("model")
    model = LlamaForCausalLM(LlamaConfig(**CONFIG)).to(device)
    done("model")
    start("ddp")
    ddp = DistributedDataParallel(model, device_ids=[rank])
    done("ddp")
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    generator = torch.Generator().manual_seed(1000 + rank)
    losses = []
    whole_run: dict = {}
    for step in range(warmup + steps):
        if step == warmup:
            torch.cuda.synchronize(device)
            time.sleep(SETTLE_S)
            dist.barrier()
            whole_run = phase_figures(allocator, rank)  # the peaks of the warm-up, for reference
            start("measured")
            if allocator == "nuvec":
                nt.reset_peak(rank)
            else:
                torch.cuda.reset_peak_memory_stats(device)
        ids = torch.randint(3, CONFIG["vocab_size"], (batch, seq), generator=generator).to(device)
        start(f"forward{step}")
        loss = ddp(input_ids=ids, labels=ids).loss
        done(f"forward{step}")
        start(f"backward{step}")
        loss.backward()
        done(f"backward{step}")
        start(f"optimizer{step}")
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        done(f"optimizer{step}")
        losses.append(float(loss.detach()))
    torch.cuda.synchronize(device)
    dist.barrier()
    record: dict = {"rank": rank, "gpu": torch.cuda.get_device_name(device), "allocator": allocator,
                    "losses": losses, "nvml_used": nvml_used(rank),
                    "parameters": sum(p.numel() for p in model.parameters()), "phases": phases,
                    "warmup": warmup, "warmup_figures": whole_run}
    if allocator == "nuvec":
        record["nuvec"] = nt.stats(rank)
    else:
        record["torch"] = {"max_memory_allocated": torch.cuda.max_memory_allocated(device),
                           "max_memory_reserved": torch.cuda.max_memory_reserved(device)}
    gathered: list = [None] * world
    dist.all_gather_object(gathered, record)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(gathered, f)
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(allocator: str, world: int, steps: int, batch: int, seq: int, out_path: str,
        trace_dir: str | None = None, warmup: int = 2) -> list[dict]:
    import torch.multiprocessing as mp

    os.environ.update(MULTICAST_OFF, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    mp.spawn(worker, args=(world, allocator, steps, batch, seq, out_path, trace_dir, warmup), nprocs=world, join=True)
    with open(out_path) as f:
        return json.load(f)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=int, default=0, help="processes, one per GPU (default: every GPU)")
    parser.add_argument("--allocators", default="torch,nuvec", help="comma-separated: torch, nuvec")
    parser.add_argument("--steps", type=int, default=3, help="measured steps (the peaks are theirs)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="steps before the peaks are reset (2: DDP rebuilds its buckets in the second)")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--json", help="write every rank's records here")
    parser.add_argument("--trace-dir", help="nuvec: write each rank's trace here (NUVEC_TRACE), phases marked")
    parser.add_argument("--phases", action="store_true", help="print each phase's live bytes and peaks")
    args = parser.parse_args()
    import torch

    gpus = torch.cuda.device_count()
    world = args.world or gpus
    if world < 1 or world > gpus:
        print(f"--world {world}: this machine has {gpus} GPU(s)", file=sys.stderr)
        return 2
    allocators = [a for a in args.allocators.split(",") if a]
    if any(a not in ("torch", "nuvec") for a in allocators):
        print(f"--allocators {args.allocators}: expected torch and/or nuvec", file=sys.stderr)
        return 2
    import tempfile

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for allocator in allocators:
            results[allocator] = run(allocator, world, args.steps, args.batch, args.seq,
                                     os.path.join(tmp, f"{allocator}.json"), args.trace_dir,
                                     args.warmup)
    mib = 1 << 20
    print(f"{world} rank(s), {args.warmup} warm-up + {args.steps} measured steps, batch {args.batch} x {args.seq} tokens, "
          f"{results[allocators[0]][0]['parameters'] / 1e6:.0f} M parameters (f32, AdamW)")
    print("| allocator | rank | losses | peak (MiB) | held / reserved peak (MiB) | NVML used (MiB) |")
    print("|---|---:|---|---:|---:|---:|")
    for allocator, records in results.items():
        for r in records:
            if allocator == "nuvec":
                peak, held = r["nuvec"]["peak"], r["nuvec"]["peak_held"]
            else:
                peak, held = r["torch"]["max_memory_allocated"], r["torch"]["max_memory_reserved"]
            used = r["nvml_used"]
            print(f"| {allocator} | {r['rank']} | {', '.join(f'{x:.4f}' for x in r['losses'])} | {peak / mib:.0f} | "
                  f"{held / mib:.0f} | {'-' if used is None else f'{used / mib:.0f}'} |")
    if "torch" in results and "nuvec" in results:
        for t, n in zip(results["torch"], results["nuvec"]):
            held = n["nuvec"]["peak_held"] / t["torch"]["max_memory_reserved"]
            same = t["losses"] == n["losses"]
            print(f"rank {t['rank']}: nuvec's peak held / PyTorch's peak reserved {held:.3f}; losses "
                  f"{'identical' if same else 'differ'} across the allocators")
    if args.phases:
        print("| allocator | rank | phase | live (MiB) | peak (MiB) | held (MiB) | peak held (MiB) |")
        print("|---|---:|---|---:|---:|---:|---:|")
        for allocator, records in results.items():
            for r in records:
                for p in r["phases"]:
                    print(f"| {allocator} | {r['rank']} | {p['phase']} | {p['live'] / mib:.1f} | {p['peak'] / mib:.1f} | "
                          f"{p['held'] / mib:.1f} | {p['peak_held'] / mib:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"world": world, "warmup": args.warmup, "steps": args.steps, "batch": args.batch, "seq": args.seq,
                       "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
