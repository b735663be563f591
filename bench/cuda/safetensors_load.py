#!/usr/bin/env python3
"""safetensors.torch.load_file(path, device="cuda") of a checkpoint: time and host memory, for the
side-by-side with nuvec's upload (bench/cuda/upload_bench.cc, run just before on the same file, which
it keeps with `keep`).

Each repetition is a fresh process (so that its memory peaks are its own) that initialises CUDA, then,
when told, loads the file onto GPU 0 and synchronises. The parent samples the child's
/proc/PID/status every half millisecond from before the load until it is done: the peaks of RssAnon
(private anonymous memory: copies of the data) and of RssFile + RssShmem (the file's page-cache pages
mapped in, shared), over their values before the load. The child then measures PyTorch's own
host-to-device copy rates of 1 GiB (pinned and pageable, median of 5) in the same run.

    python3 bench/cuda/safetensors_load.py /tmp/nuvec-upload-bench.safetensors [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path


def child(path: str) -> None:
    import torch
    from safetensors.torch import load_file

    torch.cuda.init()
    torch.empty(1, device="cuda")
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.perf_counter()
    tensors = load_file(path, device="cuda")
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
    del tensors
    torch.cuda.empty_cache()

    def rate(host: "torch.Tensor") -> float:
        device = torch.empty_like(host, device="cuda")
        rates = []
        for i in range(6):
            torch.cuda.synchronize()
            t = time.perf_counter()
            device.copy_(host, non_blocking=False)
            torch.cuda.synchronize()
            if i:
                rates.append(host.numel() / (time.perf_counter() - t) / 1e9)
        return statistics.median(rates)

    gib = 1 << 30
    pinned = torch.ones(gib, dtype=torch.uint8).pin_memory()
    pageable = torch.ones(gib, dtype=torch.uint8)
    print(json.dumps({"seconds": seconds, "bytes": nbytes, "pinned_gbps": rate(pinned),
                      "pageable_gbps": rate(pageable), "safetensors": __import__("safetensors").__version__,
                      "torch": torch.__version__}), flush=True)


def status_kb(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile", "RssShmem", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def measure(path: str) -> dict:
    p = subprocess.Popen([sys.executable, __file__, "--child", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "ready"
    base = status_kb(p.pid)
    peak = dict(base)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                s = status_kb(p.pid)
            except OSError:
                return
            peak["RssAnon"] = max(peak["RssAnon"], s["RssAnon"])
            peak["file"] = max(peak.get("file", 0), s["RssFile"] + s["RssShmem"])
            time.sleep(0.0005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    p.stdin.write("go\n")
    p.stdin.flush()
    line = p.stdout.readline()
    done.set()
    sampler.join()
    p.wait()
    if p.returncode != 0 or not line:
        raise SystemExit(f"the load failed (exit {p.returncode})")
    result = json.loads(line)
    result["rss_anon_added"] = peak["RssAnon"] - base["RssAnon"]
    result["rss_file_shmem_added"] = peak.get("file", 0) - (base["RssFile"] + base["RssShmem"])
    result["gbps"] = result["bytes"] / result["seconds"] / 1e9
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.path)
        return 0
    runs = [measure(args.path) for _ in range(args.repeat)]
    mib = 1 << 20
    print("| run | load_file s | GB/s | RssAnon peak + | RssFile+Shmem peak + | torch pinned H2D GB/s | pageable GB/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for i, r in enumerate(runs):
        print(f"| {i + 1} | {r['seconds']:.3f} | {r['gbps']:.1f} | {r['rss_anon_added'] / mib:.0f} MiB | "
              f"{r['rss_file_shmem_added'] / mib:.0f} MiB | {r['pinned_gbps']:.1f} | {r['pageable_gbps']:.1f} |")
    summary = {"runs": runs, "median_seconds": statistics.median(r["seconds"] for r in runs),
               "median_gbps": statistics.median(r["gbps"] for r in runs),
               "max_rss_anon_added": max(r["rss_anon_added"] for r in runs),
               "max_rss_file_shmem_added": max(r["rss_file_shmem_added"] for r in runs),
               "median_pinned_gbps": statistics.median(r["pinned_gbps"] for r in runs)}
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
