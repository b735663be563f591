"""torch.distributed with NCCL on nuvec's allocator: DDP training steps, one process per GPU (every
GPU of the machine, one at least), beside PyTorch's own allocator (bench/cuda/torch_ddp_step.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
import nuvec  # noqa: E402

pytestmark = pytest.mark.skipif(
    not (nuvec._nuvec._has_torch_allocator and torch.cuda.is_available() and nuvec.cuda_device_count() > 0
         and torch.distributed.is_available() and torch.distributed.is_nccl_available()),
    reason="needs a GPU, PyTorch with CUDA and NCCL, and nuvec built with CUDA")

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "cuda" / "torch_ddp_step.py"


def test_ddp_steps_on_every_gpu_match_pytorchs_allocator(tmp_path):
    out = tmp_path / "ddp.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, str(SCRIPT), "--steps", "2", "--seq", "256", "--json", str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    report = json.loads(out.read_text())
    world = report["world"]
    assert world == torch.cuda.device_count()
    torch_runs, nuvec_runs = report["results"]["torch"], report["results"]["nuvec"]
    # Every rank's record reached rank 0, in rank order.
    assert [r["rank"] for r in torch_runs] == list(range(world))
    assert [r["rank"] for r in nuvec_runs] == list(range(world))
    for t, n in zip(torch_runs, nuvec_runs):
        s = n["nuvec"]
        # The steps ran on nuvec's memory: its peak holds the model, its gradients and AdamW's two
        # moments (4 copies of the f32 parameters at least), within the limit, and went back.
        assert s["peak"] >= 4 * 4 * n["parameters"], s
        assert s["peak"] <= s["peak_held"] <= s["memory_limit"], s
        assert s["active"] <= s["peak"], s
        # The same seeded model, batches and reductions: the losses agree with PyTorch's allocator's
        # to float rounding (kernels may pick other algorithms for other addresses).
        assert n["losses"] == pytest.approx(t["losses"], rel=1e-3), (n["losses"], t["losses"])
        # Peak held against PyTorch's peak reserved in the same setting.
        assert n["nuvec"]["peak_held"] <= 1.25 * t["torch"]["max_memory_reserved"], (s, t["torch"])


def test_the_same_seeded_ddp_steps_peak_alike_in_fresh_processes(tmp_path):
    """The same seeded steps twice, each in fresh processes: nuvec's peaks repeat. Before the warm-up
    ended as torch_ddp_step.py's SETTLE_S says, the first step's 596 MiB bucket (of a ~5 GiB peak)
    was freed at one of three moments by PyTorch's NCCL watchdog's poll, and the peak moved by it in
    3 of 5 runs. 1% is well under that move (over 10% of the peak), and above what is left to vary:
    the allocation sizes and their order are the same in every run, and only the autograd thread's
    frees at a backward's end may interleave with the main thread's calls otherwise. The peak held
    (live + cached) is not asserted: where the bucket is freed late in the warm-up, its memory stays
    cached under either allocator (PyTorch's peak reserved moved by the same 596 MiB in 2 of 5 runs)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    peaks = []
    for run in range(2):
        out = tmp_path / f"run{run}.json"
        done = subprocess.run([sys.executable, str(SCRIPT), "--allocators", "nuvec", "--steps", "2", "--seq", "256",
                               "--json", str(out)], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
        peaks.append([r["nuvec"]["peak"] for r in json.loads(out.read_text())["results"]["nuvec"]])
    for peak_a, peak_b in zip(*peaks):
        assert peak_b == pytest.approx(peak_a, rel=0.01), peaks
