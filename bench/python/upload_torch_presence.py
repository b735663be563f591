"""Whether nuvec's upload runs slower in a process with PyTorch (bench/results/2026-12-02-python-upload-torch.md).

Each variant is a fresh process doing the module's own upload call
(nuvec.cpu()._load_safetensors + _nuvec._upload(nuvec.cuda(0), views)) of the
same file: one warm-up, then UPLOADS timed ones, then one more with a sampler
reading every thread's CPU affinity (/proc/self/task/*/status), not timed.
Variants differ only in what else is in the process:

  none            no PyTorch
  import_torch    `import torch`; nuvec makes the CUDA context
  torch_cuda      PyTorch made the context first (torch.zeros(1, device="cuda")): load_file's case
  nuvec_first     import torch, nuvec's runtime makes the context, then PyTorch's joins it
  cpu_work        torch_cuda + a CPU matmul before each upload (PyTorch's OpenMP threads awake)
  cpu_work_passive  the same with OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE and torch.set_num_threads(1)
  omp1            torch_cuda with OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
  small_pages     torch_cuda with the staging in small pages (NUVEC_CUDA_STAGING=small-pages)
  load_file       torch_cuda, through nuvec.torch.load_file (tensors made, as a user calls it)
  *_shared        the same with the module linked to the shared CUDA runtime (NUVEC_SHARED_SITE: a site
                  folder holding that build), which in a PyTorch process is PyTorch's own libcudart

  none_forward    none, the last upload's buffers freed first to last (as load_file's dict frees them)
  load_file_reverse  load_file, its tensors freed last to first (as a list frees them)
  cpp             nuvec's C++ upload benchmark (NUVEC_CPP_BENCH: nuvec_cuda_upload_bench) in the same rounds

Usage: NUVEC_LOAD_FILE=/tmp/nuvec-upload-bench.safetensors python3 upload_torch_presence.py [VARIANT...]
(ROUNDS: rounds of all variants, or BUDGET_S: rounds until this many seconds have passed, at least one;
UPLOADS: timed uploads per process.)
Prints one JSON object per process, then a table of medians per variant."""
import glob, json, os, statistics, subprocess, sys, threading, time

PATH = os.environ.get("NUVEC_LOAD_FILE", "/tmp/nuvec-upload-bench.safetensors")
UPLOADS = int(os.environ.get("UPLOADS", "5"))
DEFAULT = "cpp none import_torch torch_cuda nuvec_first cpu_work cpu_work_passive omp1 small_pages load_file none_shared torch_cuda_shared"
OMP1 = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}


def thread_affinities():
    """{tid: Cpus_allowed_list} of every thread now."""
    out = {}
    for task in glob.glob("/proc/self/task/*/status"):
        try:
            for line in open(task):
                if line.startswith("Cpus_allowed_list:"):
                    out[task.split("/")[4]] = line.split(":", 1)[1].strip()
        except OSError:
            pass  # the thread ended
    return out


def cpp_child():
    """nuvec's C++ benchmark in the same run: the default options, UPLOADS uploads each on a fresh device
    (load_safetensors + cuda::upload + dropping the host checkpoint), its sweep table's row."""
    bench = os.environ["NUVEC_CPP_BENCH"]
    done = subprocess.run([bench, "4", os.path.dirname(PATH), "sweep-default", "reuse", "keep", f"rounds={UPLOADS}"],
                          capture_output=True, text=True, timeout=120, check=True)
    info = {"variant": "cpp"}
    for line in done.stdout.splitlines():
        if line.startswith("pinned cudaMemcpy H2D:"):
            info["pinned_GBps"] = float(line.split(":")[1].split()[0])
        if line.startswith("| the default options |"):
            c = [x.strip() for x in line.strip("|").split("|")]
            info["row"] = line
            info.update(total_s=float(c[1].split()[0]), of_pinned=float(c[3].rstrip("%")) / 100,
                        first_copy_ms=float(c[4]), faulted_ms=float(c[5]), lock_ms=float(c[6]),
                        buffers_ms=float(c[8]), copy_GBps=float(c[9]))
    print(json.dumps(info))


def child(variant):
    if variant == "cpp":
        return cpp_child()
    base = variant[:-len("_shared")] if variant.endswith("_shared") else variant
    # The order the last upload's buffers are freed in (the next upload takes them from nuvec's cache):
    # a list frees last to first, load_file's dict first to last.
    forward = base == "none_forward"
    reverse = base == "load_file_reverse"
    base = {"none_forward": "none", "load_file_reverse": "load_file"}.get(base, base)
    info = {"variant": variant, "affinity_start": sorted(os.sched_getaffinity(0))}
    torch = None
    if base != "none":
        import torch
        info["affinity_after_import_torch"] = sorted(os.sched_getaffinity(0))
        info["torch_threads"] = torch.get_num_threads()
        if base == "cpu_work_passive":
            torch.set_num_threads(1)
    import nuvec
    from nuvec import _nuvec
    info["module"] = _nuvec.__file__
    if base == "nuvec_first":
        nuvec.cuda(0).memory()
    if torch is not None and base != "import_torch":
        torch.zeros(1, device="cuda"); torch.cuda.synchronize()
        info["affinity_after_torch_cuda"] = sorted(os.sched_getaffinity(0))
    if base == "load_file":
        import nuvec.torch

    def one():
        if base.startswith("cpu_work"):
            a = torch.randn(1024, 1024); (a @ a).sum().item()
        t0 = time.perf_counter()
        if base == "load_file":
            w = nuvec.torch.load_file(PATH, device="cuda"); torch.cuda.synchronize()
            wall, report = time.perf_counter() - t0, nuvec.torch.last_upload
            if reverse:
                for name in reversed(list(w)):
                    del w[name]
            del w
        else:
            views, _ = nuvec.cpu()._load_safetensors(PATH)
            tensors, report = _nuvec._upload(nuvec.cuda(0), views)
            wall = time.perf_counter() - t0
            if forward:
                for i in range(len(tensors)):
                    tensors[i] = None
            del views, tensors
        return wall, report

    one()  # warm-up: the context where nuvec makes it, the first buffers
    info["cudart_mapped"] = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libcudart" in line})
    info["uploads"] = []
    for _ in range(UPLOADS):
        wall, r = one()
        info["uploads"].append({"wall": wall, **{k: r[k] for k in (
            "seconds", "setup_seconds", "staging_seconds", "staging_faulted_seconds", "staging_lock_seconds",
            "buffers_seconds", "plan_seconds", "bytes", "pipelines")}})
    # One more, untimed, with every thread's affinity read while the pipelines run.
    before = thread_affinities()
    seen, stop = {}, threading.Event()

    def sample():
        while not stop.wait(0.001):
            seen.update(thread_affinities())
    sampler = threading.Thread(target=sample, daemon=True); sampler.start()
    one()
    stop.set(); sampler.join()
    new = {tid: cpus for tid, cpus in seen.items() if tid not in before}
    info["threads_before_upload"] = len(before)
    info["affinity_of_threads_before"] = sorted(set(before.values()))
    info["upload_threads_seen"] = len(new)
    info["affinity_of_upload_threads"] = sorted(set(new.values()))
    print(json.dumps(info))


def env_for(variant):
    env = dict(os.environ)
    base = variant[:-len("_shared")] if variant.endswith("_shared") else variant
    if base in ("cpu_work_passive", "omp1"):
        env.update(OMP1)
    if base == "small_pages":
        env["NUVEC_CUDA_STAGING"] = "small-pages"
    if variant.endswith("_shared"):
        site = os.environ["NUVEC_SHARED_SITE"]
        env["PYTHONPATH"] = site + os.pathsep + env.get("PYTHONPATH", "")
        # Without PyTorch in the process, its libcudart is found by path (PyTorch's wheel has one).
        import site as site_module
        libs = [lib for d in site_module.getsitepackages() for lib in glob.glob(os.path.join(d, "nvidia", "cu*", "lib", "libcudart.so.*"))]
        libs += glob.glob("/usr/local/cuda*/lib64/libcudart.so.*") + glob.glob("/usr/local/cuda*/targets/x86_64-linux/lib/libcudart.so.*")
        if libs:
            env["LD_LIBRARY_PATH"] = os.path.dirname(libs[0]) + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    return env


def summary(runs):
    rows = {}
    for run in runs:
        if "uploads" not in run:
            continue
        r = rows.setdefault(run["variant"], {k: [] for k in ("wall", "seconds", "setup", "faulted", "lock", "buffers", "copy")})
        for u in run["uploads"]:
            r["wall"].append(u["wall"]); r["seconds"].append(u["seconds"]); r["setup"].append(u["setup_seconds"])
            r["faulted"].append(u["staging_faulted_seconds"]); r["lock"].append(u["staging_lock_seconds"])
            r["buffers"].append(u["buffers_seconds"])
            r["copy"].append(u["bytes"] / (u["seconds"] - u["setup_seconds"]) / 1e9)
    m = statistics.median
    ref = m(rows["none"]["seconds"]) if "none" in rows else None
    cpp = [run for run in runs if run.get("variant") == "cpp" and "total_s" in run]
    cpp_total = m([c["total_s"] for c in cpp]) if cpp else None
    print("\n| variant | uploads | wall s (load + upload), median | / C++ total | upload s, median (min-max) | / none | "
          "first copy ms | staging faulted ms | page-locking ms | buffers made ms | copy phase GB/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    if cpp:
        totals = ", ".join("%.4f" % c["total_s"] for c in cpp)
        col = lambda key: m([c[key] for c in cpp])
        print(f"| C++ (nuvec_cuda_upload_bench sweep-default; total = load + upload + drop, fresh device) | "
              f"{len(cpp)} x {UPLOADS} | {cpp_total:.4f} ({totals}) | 1.000 | | | "
              f"{col('first_copy_ms'):.1f} | {col('faulted_ms'):.1f} | {col('lock_ms'):.1f} | {col('buffers_ms'):.1f} | "
              f"{col('copy_GBps'):.1f} |")
    for name, r in rows.items():
        s = m(r["seconds"])
        print(f"| {name} | {len(r['seconds'])} | {m(r['wall']):.4f} | {m(r['wall']) / cpp_total if cpp_total else float('nan'):.3f} | "
              f"{s:.4f} ({min(r['seconds']):.4f}-{max(r['seconds']):.4f}) | "
              f"{s / ref if ref else float('nan'):.3f} | {1e3 * m(r['setup']):.1f} | {1e3 * m(r['faulted']):.1f} | "
              f"{1e3 * m(r['lock']):.1f} | {1e3 * m(r['buffers']):.1f} | {m(r['copy']):.1f} |")
    if cpp:
        print("pinned (C++ bench, each round):", [c.get("pinned_GBps") for c in cpp])
    for run in runs:
        if run.get("variant") == "cpp":
            continue
        keys = [k for k in run if k.startswith("affinity") or k.startswith("threads") or k.startswith("upload_threads") or k == "cudart_mapped"]
        print(run.get("variant"), {k: (f"{len(run[k])} cpus" if isinstance(run[k], list) and run[k] and isinstance(run[k][0], int) else run[k]) for k in keys}
              if "uploads" in run else run)


def main(variants):
    if "NUVEC_SHARED_SITE" not in os.environ:
        variants = [v for v in variants if not v.endswith("_shared")]
    budget, t0, runs = float(os.environ.get("BUDGET_S", "0")), time.time(), []
    wanted = int(os.environ.get("ROUNDS", "0"))
    rounds = 0
    while True:
        k = rounds % len(variants)
        rounds += 1
        for v in variants[k:] + variants[:k]:  # each round starts one later: drift falls on all alike
            p = subprocess.run([sys.executable, __file__, "--child", v], capture_output=True, text=True,
                               timeout=120, env=env_for(v))
            run = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {"variant": v, "error": p.stderr[-2000:]}
            print(json.dumps(run), flush=True)
            runs.append(run)
        if wanted and rounds >= wanted:
            break
        if not wanted and time.time() - t0 > budget / 2:  # another round would pass the budget
            break
    summary(runs)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main(sys.argv[1:] or DEFAULT.split())
