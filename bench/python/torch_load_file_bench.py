"""On the H200 (bench/results/2026-12-01-python-load-file.md): a 4 GiB safetensors file loaded onto the GPU by
safetensors.torch.load_file(device="cuda") and by nuvec.torch.load_file
(device="cuda"), each in its own process, 3 loads each after a warm-up of
CUDA; the pinned host-to-device bandwidth measured in the same run; private
host memory (RssAnon) added by a load; and the allocator plugin installed
from the module (PyTorch's tensors counted in nuvec.cuda(0)); and, as
"bare", the module's upload in a process without PyTorch.
NUVEC_BENCH_METHODS picks some of: safetensors nuvec plugin bare."""
import contextlib, json, os, statistics, subprocess, sys, threading, time

PATH = os.environ.get("NUVEC_LOAD_FILE", "/tmp/nuvec-4g.safetensors")  # written if absent
HERE = os.path.dirname(os.path.abspath(__file__))


def rss_anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


class PeakRssAnon:
    """The highest RssAnon while a load runs (a thread reading /proc/self/status every 0.5 ms; the
    loaders release the GIL while they copy)."""
    def __enter__(self):
        self.peak, self._stop = rss_anon(), threading.Event()
        def poll():
            while not self._stop.wait(0.0005):
                self.peak = max(self.peak, rss_anon())
        self._thread = threading.Thread(target=poll, daemon=True); self._thread.start()
        return self
    def __exit__(self, *exc):
        self._stop.set(); self._thread.join(); self.peak = max(self.peak, rss_anon())


def bare():
    """nuvec's upload from Python without PyTorch in the process: the module's own call (what
    nuvec.torch.load_file runs before making tensors), three timed loads, each on nuvec.cuda(0)."""
    import nuvec
    from nuvec import _nuvec
    out = {"method": "bare", "seconds": [], "report_seconds": []}
    for _ in range(3):
        t0 = time.perf_counter()
        views, _ = nuvec.cpu()._load_safetensors(PATH)
        tensors, report = _nuvec._upload(nuvec.cuda(0), views)
        seconds = time.perf_counter() - t0
        del views, tensors
        out["seconds"].append(seconds)
        out["report_seconds"].append(report["seconds"])
        out["report"] = report
    print(json.dumps(out))


def child(method):
    if method == "bare":
        return bare()
    import torch
    if method == "plugin":  # PyTorch swaps allocators only before its first CUDA allocation
        import nuvec, nuvec.torch
        nuvec.torch.install()
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()
    out = {"method": method, "seconds": [], "private_host_bytes": [], "report": None}
    if method == "plugin":
        before = nuvec.cuda(0).memory().active
        x = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        out["plugin_active_delta"] = nuvec.cuda(0).memory().active - before
        out["stats"] = nuvec.torch.stats(0)
        del x
    # Three timed loads, then one more with the RssAnon sampler (its thread polling /proc beside the
    # upload's pipelines is kept out of the timed ones).
    for load in range(4):
        sampled = load == 3
        base = rss_anon()
        with PeakRssAnon() if sampled else contextlib.nullcontext() as peak:
            t0 = time.perf_counter()
            if method == "safetensors":
                import safetensors.torch
                w = safetensors.torch.load_file(PATH, device="cuda")
            else:
                import nuvec, nuvec.torch
                w = nuvec.torch.load_file(PATH, device="cuda")
            torch.cuda.synchronize()
            seconds = time.perf_counter() - t0
        if sampled:
            out["sampled_load_seconds"] = seconds
            out["private_host_peak_bytes"] = peak.peak - base
        else:
            out["seconds"].append(seconds)
            out["private_host_bytes"].append(rss_anon() - base)
        if method != "safetensors":
            out["report"] = nuvec.torch.last_upload
            if not sampled:
                out.setdefault("report_seconds", []).append(nuvec.torch.last_upload["seconds"])
            out["wired_after"] = nuvec.cuda(0).memory().wired
        first = next(iter(w.values()))
        out["checksum"] = float(first.float().sum().item())
        del w, first
        torch.cuda.synchronize()
    print(json.dumps(out))


def main():
    import torch
    if not os.path.exists(PATH):
        import safetensors.torch
        tensors = {f"layer{i}.weight": torch.full((8192, 8192), float(i % 7) - 3.0, dtype=torch.bfloat16) for i in range(32)}
        safetensors.torch.save_file(tensors, PATH)
        del tensors
    size = os.path.getsize(PATH)
    # Pinned bandwidth, same run: 1 GiB pinned -> device, median of 5.
    host = torch.empty(1 << 30, dtype=torch.uint8).pin_memory(); dev = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    times = []
    for _ in range(5):
        torch.cuda.synchronize(); t0 = time.perf_counter(); dev.copy_(host, non_blocking=True); torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    pinned = (1 << 30) / statistics.median(times)
    del host, dev
    results = {"file_bytes": size, "pinned_GBps": pinned / 1e9}
    methods = os.environ.get("NUVEC_BENCH_METHODS", "safetensors nuvec plugin bare").split()
    for method in methods:
        run = subprocess.run([sys.executable, __file__, method], capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            results[method] = {"error": run.stderr[-3000:]}
        else:
            results[method] = json.loads(run.stdout.strip().splitlines()[-1])
    for method in methods:
        r = results[method]
        if "seconds" in r:
            r["median_s"] = statistics.median(r["seconds"]); r["GBps"] = size / r["median_s"] / 1e9
            r["of_pinned"] = r["GBps"] * 1e9 / pinned
    for method in methods:
        r = results[method]
        if "report_seconds" in r:
            r["python_over_cpp"] = r["median_s"] / statistics.median(r["report_seconds"])
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    child(sys.argv[1]) if len(sys.argv) > 1 else main()
