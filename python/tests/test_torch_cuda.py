"""nuvec.torch on a GPU: the allocator plugin (install, statistics, limits
per device, refusals) and load_file(device="cuda") with and without it,
against safetensors.torch.load_file. Skipped without a GPU, PyTorch with
CUDA, or a nuvec built with CUDA.

PyTorch takes an allocator only before its first CUDA allocation, so each
case runs in a fresh interpreter (the scripts below), which asserts and
exits non-zero with the failure."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import nuvec  # noqa: E402

pytestmark = pytest.mark.skipif(
    not (nuvec._nuvec._has_torch_allocator and torch.cuda.is_available() and nuvec.cuda_device_count() > 0),
    reason="needs a GPU, PyTorch with CUDA and nuvec built with CUDA")


def run_fresh(script: str, *args: str, extra_env: dict[str, str] | None = None) -> str:
    """Runs `script` in a new interpreter with this one's nuvec (and `extra_env`); returns its output."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **(extra_env or {}))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """A safetensors file as PyTorch users have them: bf16, f32 and int64 tensors, one empty."""
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(3)
    tensors = {"embed": torch.randn(4096, 1024, generator=g).to(torch.bfloat16),
               "norm": torch.randn(1024, generator=g),
               "ids": torch.arange(1000, dtype=torch.int64),
               "none": torch.zeros(0, 8, dtype=torch.float16),
               "big": torch.randn(8192, 4096, generator=g).to(torch.bfloat16)}  # 64 MiB: several staging slots
    path = tmp_path_factory.mktemp("ckpt") / "model.safetensors"
    save_file(tensors, str(path))
    return path


def test_plugin_allocations_are_nuvec_buffers_with_limits():
    run_fresh("""
        import torch, nuvec, nuvec.torch as nt
        nt.install()
        assert nt.installed()
        before = nt.stats()
        x = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
        s = nt.stats()
        assert s["active"] - before["active"] == nuvec.allocation_size(64 << 20), (before, s)
        assert s == nuvec.cuda(0).memory().as_dict() | {k: s[k] for k in ("peak_held", "committed", "peak_committed")}
        assert s["peak_held"] >= s["active"] and s["committed"] >= s["active"]
        del x
        torch.cuda.synchronize()
        s = nt.stats()
        assert s["active"] == before["active"] and s["cache"] >= 64 << 20, s

        # A hard limit: PyTorch's allocation raises with nuvec's message, and no statistic moves.
        limit = s["active"] + (256 << 20)
        previous = nt.set_memory_limit(limit)
        assert previous == before["memory_limit"]
        snapshot = nt.stats()
        try:
            torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
            raise AssertionError("1 GiB past a 256 MiB headroom was allocated")
        except RuntimeError as e:
            assert "memory limit" in str(e), str(e)
        assert nt.stats() == snapshot, (snapshot, nt.stats())
        assert nt.set_memory_limit(previous) == limit

        # The cache limit trims what is cached; reset_peak restarts the peaks.
        assert nt.set_cache_limit(0) == before["cache_limit"]
        assert nt.stats()["cache"] == 0
        nt.reset_peak()
        s = nt.stats()
        assert s["peak"] == s["active"] and s["peak_held"] == s["active"] + s["cache"], s

        # Every GPU of the process has its own device and figures.
        for i in range(torch.cuda.device_count()):
            assert nt.stats(i)["memory_limit"] > 0
        print("ok")
    """)


def test_per_device_limit_from_the_environment():
    """NUVEC_MEMORY_LIMIT_CUDA0 is GPU 0's limit under PyTorch, over NUVEC_MEMORY_LIMIT."""
    run_fresh("""
        import torch, nuvec.torch as nt
        nt.install()
        assert nt.stats(0)["memory_limit"] == 3 << 30, nt.stats(0)
        try:
            torch.empty(4 << 30, dtype=torch.uint8, device="cuda:0")
            raise AssertionError("4 GiB past a 3 GiB limit was allocated")
        except RuntimeError as e:
            assert "memory limit" in str(e), str(e)
        if torch.cuda.device_count() > 1:
            assert nt.stats(1)["memory_limit"] == 5 << 30, nt.stats(1)
        print("ok")
    """, extra_env={"NUVEC_MEMORY_LIMIT": "5GiB", "NUVEC_MEMORY_LIMIT_CUDA0": "3GiB"})


def test_load_file_through_the_plugin_matches_safetensors(checkpoint):
    run_fresh("""
        import sys, torch, nuvec, nuvec.torch as nt
        from safetensors.torch import load_file
        nt.install()
        path = sys.argv[1]
        expected = load_file(path, device="cuda")   # PyTorch's tensors: nuvec buffers now too
        before = nt.stats()
        ours = nt.load_file(path, device="cuda")
        assert list(ours) == list(expected)
        for name, t in ours.items():
            assert t.device.type == "cuda" and t.dtype == expected[name].dtype and t.shape == expected[name].shape
            assert torch.equal(t, expected[name]), name
        after = nt.stats()
        added = sum(nuvec.allocation_size(t.numel() * t.element_size()) for t in ours.values() if t.numel())
        assert after["active"] - before["active"] == added, (before["active"], after["active"], added)
        assert after["wired"] == 0, "the staging is given back after the upload"
        report = nt.last_upload
        assert report["bytes"] == sum(t.numel() * t.element_size() for t in ours.values())
        assert 0 < report["staging_bytes"] <= nuvec.cuda(0).memory().wired_limit
        del ours
        assert nt.stats()["active"] == before["active"]
        print("ok")
    """, str(checkpoint))


def test_load_file_without_the_plugin_counts_in_nuvec_not_pytorch(checkpoint):
    run_fresh("""
        import sys, torch, nuvec, nuvec.torch as nt
        from safetensors.torch import load_file
        path = sys.argv[1]
        expected = load_file(path, device="cuda")
        torch_before = torch.cuda.memory_allocated()
        before = nuvec.cuda(0).memory()
        ours = nt.load_file(path, device="cuda")
        for name, t in ours.items():
            assert torch.equal(t, expected[name]), name
        assert torch.cuda.memory_allocated() == torch_before, "the tensors are nuvec buffers, not PyTorch's"
        added = sum(nuvec.allocation_size(t.numel() * t.element_size()) for t in ours.values() if t.numel())
        assert nuvec.cuda(0).memory().active - before.active == added
        y = ours["big"].float() * 2   # PyTorch computes on them as on its own
        assert torch.equal(y, expected["big"].float() * 2)
        del ours
        assert nuvec.cuda(0).memory().active == before.active
        print("ok")
    """, str(checkpoint))


def test_install_after_pytorch_allocated_is_a_clear_error():
    run_fresh("""
        import torch, nuvec, nuvec.torch as nt
        torch.empty(1, device="cuda")
        try:
            nt.install()
            raise AssertionError("install() after a CUDA allocation was accepted")
        except nuvec.InvalidArgument as e:
            assert "before the first CUDA allocation" in str(e), str(e)
        assert not nt.installed()
        print("ok")
    """)
