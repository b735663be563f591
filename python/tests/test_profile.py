"""python3 -m nuvec.profile: what it refuses, and how it says so (no GPU or PyTorch needed)."""

import subprocess
import sys


def test_profile_refuses_what_it_cannot_run(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "nuvec.profile", *map(str, args)], capture_output=True, text=True)

    missing = run(tmp_path, "--device", "cuda")
    assert missing.returncode == 2 and "no config.json there" in missing.stderr
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"")
    cpu = run(tmp_path, "--device", "cpu")
    assert cpu.returncode == 2 and "nuvec profile MODEL" in cpu.stderr


def test_profile_on_a_gpu_prints_every_phase_for_both_allocators(tmp_path):
    """A tiny random-weight Llama through every phase on nuvec's allocator and PyTorch's (needs a GPU,
    PyTorch with CUDA, transformers and nuvec built with CUDA)."""
    import json

    import pytest

    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import nuvec

    if not (nuvec._nuvec._has_torch_allocator and torch.cuda.is_available() and nuvec.cuda_device_count() > 0):
        pytest.skip("needs a GPU, PyTorch with CUDA and nuvec built with CUDA")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    transformers.LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(tmp_path / "m", safe_serialization=True)
    out = tmp_path / "profile.json"
    done = subprocess.run([sys.executable, "-m", "nuvec.profile", tmp_path / "m", "--device", "cuda",
                           "--prompt-len", "16", "--max-new", "4", "--jobs", "6", "--json-out", out],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "peak_with_mapped" in done.stdout and "torch max_reserved" in done.stdout
    phases = json.loads(out.read_text())["phases"]
    assert [p["phase"] for p in phases] == ["load", "prefill", "decode"]
    weights = phases[0]["nuvec"]["weights_bytes"]
    load = phases[0]
    # The weights live on the GPU after the load, on both allocators.
    assert load["nuvec"]["stats"]["peak_with_mapped"] >= weights
    assert load["torch"]["max_memory_allocated"] >= weights
    for p in phases:
        assert p["nuvec"]["stats"]["peak_held"] >= p["nuvec"]["stats"]["peak"] > 0
        assert p["torch"]["max_memory_reserved"] >= p["torch"]["max_memory_allocated"] > 0
    assert phases[2]["nuvec"]["tokens"] == 4 and phases[1]["nuvec"]["tokens"] == 16
