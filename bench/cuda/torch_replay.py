"""PyTorch's side of the GPU trace replay (bench/cuda/replay_bench.cc has nuvec's and cudaMallocAsync's).

Replays each trace's allocate/free events (traces/*.jsonl.gz, docs/trace-format.md) through PyTorch's
caching allocator, torch.cuda.caching_allocator_alloc / caching_allocator_delete, on the current
stream of GPU 0, and reports torch.cuda.max_memory_reserved() (and max_memory_allocated()) over peak
live, the highest sum of the requested bytes of live blocks. Between traces the cache is emptied and
the peaks reset. Prints one JSON object per trace.

    python3 bench/cuda/torch_replay.py traces/llama_generate.jsonl.gz traces/llama_train_step.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import time


def events(path: str):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        header = json.loads(f.readline())
        if header.get("nuvec_trace") != 1:
            raise SystemExit(f"{path}: not a nuvec trace of version 1")
        for line in f:
            if line.strip():
                yield json.loads(line)


def replay(path: str) -> dict:
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base_reserved = torch.cuda.memory_reserved()
    stream = torch.cuda.current_stream()
    live: dict[int, tuple[int, int]] = {}
    live_bytes = peak_live = allocations = frees = 0
    start = time.perf_counter()
    for e in events(path):
        kind = e["event"]
        if kind == "allocate":
            size = int(e["requested"])
            ptr = torch.cuda.caching_allocator_alloc(size, 0, stream) if size > 0 else 0
            live[e["id"]] = (ptr, size)
            live_bytes += size
            peak_live = max(peak_live, live_bytes)
            allocations += 1
        elif kind == "free":
            ptr, size = live.pop(e["id"], (None, 0))
            if ptr is None:
                continue
            if ptr:
                torch.cuda.caching_allocator_delete(ptr)
            live_bytes -= size
            frees += 1
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    reserved, allocated = torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated()
    for ptr, _ in live.values():
        if ptr:
            torch.cuda.caching_allocator_delete(ptr)
    torch.cuda.empty_cache()
    return {
        "trace": path,
        "peak_live": peak_live,
        "allocations": allocations,
        "frees": frees,
        "torch": {
            "max_memory_reserved": reserved,
            "max_memory_allocated": allocated,
            "reserved_before": base_reserved,
            "ratio": reserved / peak_live if peak_live else 0.0,
            "allocated_ratio": allocated / peak_live if peak_live else 0.0,
            "seconds": seconds,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="+")
    args = parser.parse_args()
    import torch

    torch.cuda.init()
    print(json.dumps({"torch": torch.__version__, "allocator": torch.cuda.get_allocator_backend()}))
    for path in args.traces:
        print(json.dumps(replay(path)), flush=True)


if __name__ == "__main__":
    main()
