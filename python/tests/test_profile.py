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
