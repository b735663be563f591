"""The phase method on a GPU: a transformers causal LM, phase by phase, on
nuvec's allocator and on PyTorch's own, each phase in a fresh process.

    python3 -m nuvec.profile MODEL_DIR --device cuda [--prompt-len 512] [--max-new 64] [--jobs N] [--json]

MODEL_DIR is a Hugging Face model folder (config.json and *.safetensors);
the prompt is synthetic (token ids), so no tokenizer is needed. Phases, as
`nuvec profile` runs them on the CPU (docs/lm.md): load (the weights onto
the GPU), prefill (one forward pass over the prompt, the KV cache filled),
decode (--max-new greedy steps after that prefill). Each phase runs in a
fresh process per allocator: the process loads the model, resets the peaks,
runs the phase and reports. With nuvec (nuvec.torch.install() before
anything touches CUDA), the figures are nuvec.cuda(i)'s MemoryStats
(`peak_with_mapped`, `peak_held` = the highest active + cache, the device
memory committed); with PyTorch's allocator, torch.cuda.max_memory_allocated()
and max_memory_reserved() for the same phase. NVML's per-process memory
(sampled every few milliseconds during the phase, where pynvml is
installed; else read with nvidia-smi at the phase's end) is the operating
system's figure: it adds the CUDA context and what libraries take outside
any allocator (cuBLAS workspaces, kernels loaded on first use), which the
report separates by reading NVML once more right after the context is made.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

PHASES = ("load", "prefill", "decode")
ALLOCATORS = ("nuvec", "torch")
MiB = 1 << 20


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


# ---- NVML: the operating system's figure -----------------------------------

class NvmlSampler:
    """This process's memory on one GPU as NVML reports it: read() now, and
    the highest reading while running (a thread polling every 2 ms)."""

    def __init__(self, gpu: int) -> None:
        self.gpu = gpu
        self.peak: int | None = None
        self.how = "none"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handle = None
        try:
            import pynvml  # noqa: PLC0415

            pynvml.nvmlInit()
            self._pynvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(gpu)
            self.how = "pynvml, sampled every 2 ms"
        except Exception:  # noqa: BLE001 - no pynvml: nvidia-smi at the phase's end
            self._pynvml = None
            self.how = "nvidia-smi, at the end of the phase"

    def read(self) -> int | None:
        if self._handle is not None:
            try:
                for p in self._pynvml.nvmlDeviceGetComputeRunningProcesses(self._handle):
                    if p.pid == os.getpid() and p.usedGpuMemory is not None:
                        return int(p.usedGpuMemory)
            except Exception:  # noqa: BLE001
                return None
            return None
        try:
            out = subprocess.run(["nvidia-smi", f"--id={self.gpu}", "--query-compute-apps=pid,used_memory",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        for line in out.splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) == 2 and fields[0] == str(os.getpid()) and fields[1].isdigit():
                return int(fields[1]) * MiB
        return None

    def _note(self, value: int | None) -> None:
        if value is not None:
            self.peak = value if self.peak is None else max(self.peak, value)

    def start(self) -> None:
        self.peak = None
        self._note(self.read())
        if self._handle is None:
            return
        self._stop.clear()

        def poll() -> None:
            while not self._stop.wait(0.002):
                self._note(self.read())

        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()

    def stop(self) -> int | None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        self._note(self.read())
        return self.peak


# ---- one phase in this process ----------------------------------------------

def _load_model(model_dir: Path, device: str, dtype):
    """from_pretrained into host memory, then moved to the GPU: the same path on both allocators.
    (device_map= would make transformers warm PyTorch's caching allocator up, reading
    torch.cuda.memory_reserved(), which a pluggable allocator does not answer.)"""
    import torch  # noqa: PLC0415
    import transformers  # noqa: PLC0415
    from transformers import AutoModelForCausalLM  # noqa: PLC0415

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    dtype_argument = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"  # renamed in 4.56
    model = AutoModelForCausalLM.from_pretrained(model_dir, **{dtype_argument: dtype}).to(device)
    torch.cuda.synchronize()
    return model.eval()


def run_phase(args: argparse.Namespace) -> dict:
    gpu = torch_index(args.device)
    if args.allocator == "nuvec":
        import nuvec.torch as nt  # noqa: PLC0415

        nt.install()  # before anything touches CUDA memory
    import torch  # noqa: PLC0415

    import nuvec  # noqa: PLC0415

    dtype = getattr(torch, args.dtype)
    device = f"cuda:{gpu}"
    torch.cuda.set_device(gpu)
    nvml = NvmlSampler(physical_gpu(gpu))
    torch.zeros(1, device=device)  # the context, made before anything is measured
    torch.cuda.synchronize()
    context = nvml.read()

    def reset() -> None:
        torch.cuda.synchronize()
        if args.allocator == "nuvec":
            nuvec.cuda(gpu).reset_peak()
        else:
            torch.cuda.reset_peak_memory_stats(gpu)
        nvml.start()

    # Synthetic token ids, inside the model's vocabulary (a small model's may
    # have fewer than 1000 ids; an id past it is a device-side assert on a GPU).
    vocab = int(json.loads((args.model / "config.json").read_text()).get("vocab_size") or 1000)
    low, high = min(3, vocab - 1), min(1000, vocab)
    prompt = torch.randint(low, high, (1, args.prompt_len), generator=torch.Generator().manual_seed(1)).to(device)
    tokens = 0
    if args.phase == "load":
        reset()
        start = time.perf_counter()
        model = _load_model(args.model, device, dtype)
    else:
        model = _load_model(args.model, device, dtype)
        with torch.no_grad():
            if args.phase == "prefill":
                reset()
                start = time.perf_counter()
                out = model(prompt, use_cache=True)
                tokens = args.prompt_len
            else:
                out = model(prompt, use_cache=True)
                past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
                del out
                reset()
                start = time.perf_counter()
                for _ in range(args.max_new):
                    out = model(token, past_key_values=past, use_cache=True)
                    past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
                tokens = args.max_new
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    nvml_peak = nvml.stop()
    result = {"phase": args.phase, "allocator": args.allocator, "seconds": seconds, "tokens": tokens,
              "parameters": sum(p.numel() for p in model.parameters()),
              "weights_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
              "nvml_peak": nvml_peak, "nvml_context": context, "nvml_how": nvml.how,
              "torch": torch.__version__}
    if args.allocator == "nuvec":
        stats = nt.stats(gpu)
        result["stats"] = stats
        result["held_peak"] = stats["peak_committed"]  # what the device gave nuvec, at most
    else:
        result["max_memory_allocated"] = torch.cuda.max_memory_allocated(gpu)
        result["max_memory_reserved"] = torch.cuda.max_memory_reserved(gpu)
        result["held_peak"] = result["max_memory_reserved"]
    return result


def torch_index(device: str) -> int:
    if device == "cuda":
        return 0
    return int(device.split(":", 1)[1])


def physical_gpu(index: int) -> int:
    """NVML's index of CUDA's device `index` (CUDA_VISIBLE_DEVICES may renumber)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        ids = [v.strip() for v in visible.split(",")]
        if index < len(ids) and ids[index].isdigit():
            return int(ids[index])
    return index


# ---- the parent: every phase in fresh processes, one table ------------------

def start_child(args: argparse.Namespace, phase: str, allocator: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "nuvec.profile", str(args.model), "--device", args.device, "--prompt-len",
               str(args.prompt_len), "--max-new", str(args.max_new), "--dtype", args.dtype, "--phase", phase,
               "--allocator", allocator]
    env = dict(os.environ, CUDA_DEVICE_ORDER="PCI_BUS_ID")  # CUDA's numbering = NVML's
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finish_child(child: subprocess.Popen, phase: str, allocator: str) -> dict:
    out, err = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"nuvec.profile: the {phase} phase on {allocator}'s allocator failed "
                         f"(exit {child.returncode}):\n{err[-4000:]}")
    return json.loads(out.strip().splitlines()[-1])


def run_children(args: argparse.Namespace) -> list[dict]:
    """Every (phase, allocator) in its own process, --jobs of them at a time; progress on stderr."""
    pending = [(phase, allocator) for phase in PHASES for allocator in ALLOCATORS]
    results: dict[tuple[str, str], dict] = {}
    running: list[tuple[subprocess.Popen, str, str, float]] = []
    start = time.perf_counter()
    while pending or running:
        while pending and len(running) < args.jobs:
            phase, allocator = pending.pop(0)
            running.append((start_child(args, phase, allocator), phase, allocator, time.perf_counter()))
        child, phase, allocator, began = running.pop(0)
        results[(phase, allocator)] = finish_child(child, phase, allocator)
        print(f"nuvec.profile: {phase} on {allocator}'s allocator done in {time.perf_counter() - began:.1f} s "
              f"(at {time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)
    return [{"phase": phase, **{a: results[(phase, a)] for a in ALLOCATORS}} for phase in PHASES]


def explain(row: dict) -> list[str]:
    """What separates the allocators' figures from each other and from NVML's, for one phase."""
    n, t = row["nuvec"], row["torch"]
    s = n["stats"]
    notes = []
    gap = s["peak_with_mapped"] - t["max_memory_allocated"]
    notes.append(
        f"{row['phase']}: peak_with_mapped {fmt_bytes(s['peak_with_mapped'])} vs max_memory_allocated "
        f"{fmt_bytes(t['max_memory_allocated'])} ({gap / max(1, t['max_memory_allocated']):+.1%}): both count live "
        f"tensors at their rounded sizes; mapped is {fmt_bytes(s['mapped'])} (transformers maps the checkpoint "
        "itself, not through nuvec), and each run's own sizes and order of allocation differ slightly")
    for who, held, name in (("nuvec", n["held_peak"], "peak committed"), ("torch", t["held_peak"], "max_memory_reserved")):
        r = row[who]
        if r["nvml_peak"] is None:
            notes.append(f"{row['phase']}: NVML gave no figure for the {who} process")
            continue
        context = r["nvml_context"] or 0
        rest = r["nvml_peak"] - context - held
        notes.append(
            f"{row['phase']}, {who}: NVML {fmt_bytes(r['nvml_peak'])} = the CUDA context and libraries "
            f"{fmt_bytes(context)} (read before the model) + the allocator's {name} {fmt_bytes(held)} + "
            f"{fmt_bytes(rest)} outside any allocator (cuBLAS workspaces, kernels loaded on first use)")
    return notes


def table(rows: list[dict]) -> str:
    head = ["phase", "time s (nuvec / torch)", "tokens/s nuvec", "active", "peak", "mapped", "peak_with_mapped",
            "peak_held", "committed peak", "torch max_allocated", "torch max_reserved", "NVML nuvec", "NVML torch"]
    lines = [head]
    for row in rows:
        n, t = row["nuvec"], row["torch"]
        s = n["stats"]
        lines.append([row["phase"], f"{n['seconds']:.3f} / {t['seconds']:.3f}",
                      f"{n['tokens'] / n['seconds']:.1f}" if n["tokens"] else "-",
                      fmt_bytes(s["active"]), fmt_bytes(s["peak"]), fmt_bytes(s["mapped"]),
                      fmt_bytes(s["peak_with_mapped"]), fmt_bytes(s["peak_held"]), fmt_bytes(s["peak_committed"]),
                      fmt_bytes(t["max_memory_allocated"]), fmt_bytes(t["max_memory_reserved"]),
                      fmt_bytes(n["nvml_peak"]), fmt_bytes(t["nvml_peak"])])
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    out = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in lines]
    out.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def profile(args: argparse.Namespace) -> int:
    rows = run_children(args)
    first = rows[0]["nuvec"]
    everything = {"model": str(args.model), "device": args.device, "prompt_len": args.prompt_len,
                  "max_new": args.max_new, "dtype": args.dtype, "jobs": args.jobs, "phases": rows}
    if args.json_out:
        args.json_out.write_text(json.dumps(everything, indent=1) + "\n")
    if args.json:
        print(json.dumps(everything, indent=1))
        return 0
    together = (f"{args.jobs} processes at a time on the one GPU: the times contend, the memory figures are "
                "each process's own") if args.jobs > 1 else "one process at a time"
    print(f"{args.model}: {first['parameters'] / 1e9:.2f} B parameters, weights {fmt_bytes(first['weights_bytes'])} "
          f"({args.dtype}); prompt {args.prompt_len} tokens, decode {args.max_new} tokens; {args.device}, "
          f"torch {first['torch']}; each phase in a fresh process per allocator ({together}); "
          f"NVML: {first['nvml_how']}\n")
    print(table(rows))
    print()
    for row in rows:
        for note in explain(row):
            print(note)
    return 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m nuvec.profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path, help="a Hugging Face model folder (config.json, *.safetensors)")
    parser.add_argument("--device", default="cuda",
                        help="cuda or cuda:N (the CPU's phases are the C++ command's: nuvec profile)")
    parser.add_argument("--prompt-len", type=int, default=512)
    parser.add_argument("--max-new", type=int, default=64)
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--jobs", type=int, default=1,
                        help="phase processes run at a time (default 1; more shortens the run, and the times "
                             "then contend with each other while the memory figures stay each process's own)")
    parser.add_argument("--json", action="store_true", help="print every figure as JSON instead of the table")
    parser.add_argument("--json-out", type=Path, help="also write every figure as JSON to this file")
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("--allocator", choices=ALLOCATORS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.device != "cuda" and not (args.device.startswith("cuda:") and args.device[5:].isdigit()):
        parser.error(f"--device {args.device}: expected cuda or cuda:N (on the CPU, run the C++ command "
                     "`nuvec profile MODEL`)")
    if not (args.model / "config.json").is_file():
        parser.error(f"{args.model}: no config.json there (expected a Hugging Face model folder)")
    if not any(args.model.glob("*.safetensors")):
        parser.error(f"{args.model}: no *.safetensors file there")
    if args.prompt_len < 1 or args.max_new < 1:
        parser.error("--prompt-len and --max-new must be at least 1")
    if args.jobs < 1 or args.jobs > len(PHASES) * len(ALLOCATORS):
        parser.error(f"--jobs {args.jobs}: expected 1 to {len(PHASES) * len(ALLOCATORS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.phase:
        print(json.dumps(run_phase(args)))
        return 0
    import nuvec  # noqa: PLC0415

    if not nuvec._nuvec._has_torch_allocator:
        raise SystemExit("nuvec.profile: this nuvec was built without CUDA (rebuild with the CUDA toolkit, "
                         "NUVEC_WITH_CUDA=ON)")
    if nuvec.cuda_device_count() <= torch_index(args.device):
        raise SystemExit(f"nuvec.profile: --device {args.device}: this machine has "
                         f"{nuvec.cuda_device_count()} CUDA device(s)")
    return profile(args)


if __name__ == "__main__":
    sys.exit(main())
