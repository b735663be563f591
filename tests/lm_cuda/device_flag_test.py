#!/usr/bin/env python3
"""`nuvec run` and `nuvec profile` with --device: bad values are usage errors
(exit 2, one line naming what --device takes), and --device cuda where the
GPU path cannot run (no GPU, no driver, or nuvec built without CUDA) is one
clear line and exit 1, before the model is loaded. --device cpu is the CPU
path as before. On a machine with a usable GPU the cuda cases are left to
the GPU tests (tests/lm_cuda) and bench/cuda/run_lm_cuda_h200.sh.

Usage: device_flag_test.py NUVEC_BINARY
"""
import os
import subprocess
import sys
import tempfile

TINY = ["--vocab", "300", "--hidden", "64", "--intermediate", "128", "--layers", "2", "--heads", "4",
        "--kv-heads", "2", "--context", "512", "--init-std", "0.1"]


def run(nuvec, *args):
    return subprocess.run([nuvec, *args], capture_output=True, text=True, timeout=60)


def refused(p, code, says, what):
    assert p.returncode == code, (what, p.returncode, p.stdout, p.stderr)
    assert says in p.stderr, (what, p.stderr)
    assert "Traceback" not in p.stderr and "terminate called" not in p.stderr, (what, p.stderr)
    # One error line (CLI11 adds its usage hint on a line of its own).
    errors = [line for line in p.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, (what, p.stderr)


def main():
    nuvec = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="nuvec_device_") as tmp:
        model = os.path.join(tmp, "tiny")
        made = run(nuvec, "demo-model", model, *TINY)
        assert made.returncode == 0, made.stderr

        for bad in ["gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:+1", "cuda: 0", "cuda:99999", "CUDA", "cpu ",
                    "cuda:0:1", "\x1b[31m", "c" * 5000]:
            for command in (["run", model, "--prompt-len", "4", "--max-new", "2"],
                            ["profile", model, "--prompt-len", "4", "--max-new", "2"]):
                p = run(nuvec, *command, "--device", bad)
                refused(p, 2, "takes cpu, cuda or cuda:N", f"{command[0]} --device {bad[:20]!r}")
                assert "\x1b" not in p.stderr, "a control character reached the terminal"

        cpu = run(nuvec, "run", model, "--prompt-len", "4", "--max-new", "3", "--device", "cpu")
        assert cpu.returncode == 0, cpu.stderr
        assert len(cpu.stdout.strip().split(",")) == 3, cpu.stdout

        why = run(nuvec, "run", model, "--prompt-len", "4", "--max-new", "2", "--device", "cuda")
        if why.returncode == 0:
            print("device_flag_test: a GPU runs here; the no-GPU refusals are not checked")
            return
        # This machine cannot run the GPU path: every form says so in one line.
        for device in ["cuda", "cuda:0", "cuda:3"]:
            for command in (["run", model, "--prompt-len", "4", "--max-new", "2"],
                            ["profile", model, "--prompt-len", "4", "--max-new", "2"]):
                p = run(nuvec, *command, "--device", device)
                name = device if ":" in device else "cuda:0"
                refused(p, 1, f"--device {name}: ", f"{command[0]} --device {device}")
                assert "run on the CPU with --device cpu" in p.stderr or "without CUDA support" in p.stderr, p.stderr
                assert "prefill" not in p.stdout and p.stdout == "", (device, p.stdout)
        # The CPU path's own flags are refused with a GPU rather than ignored
        # (checked before the device, so they show here too).
        p = run(nuvec, "run", model, "--prompt-len", "4", "--device", "cuda", "--mlock")
        refused(p, 1, "--mlock is for --device cpu", "--mlock with cuda")
        p = run(nuvec, "run", model, "--prompt-len", "4", "--device", "cuda", "--kv-cache", "f16")
        refused(p, 1, "--kv-cache is for --device cpu", "--kv-cache with cuda")
    print("device_flag_test: --device refusals are one clear line each")


if __name__ == "__main__":
    main()
