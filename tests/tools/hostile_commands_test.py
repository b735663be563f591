#!/usr/bin/env python3
"""The nuvec command on hostile input: each refusal is one clear message and a
non-zero exit, at once (never a hang, a traceback or a wrapped number).

Usage: hostile_commands_test.py NUVEC_BINARY
"""
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile

TINY = ["--vocab", "300", "--hidden", "64", "--intermediate", "128", "--layers", "2", "--heads", "4",
        "--kv-heads", "2", "--context", "512", "--init-std", "0.1"]


def run(nuvec, *args, env=None):
    return subprocess.run([nuvec, *args], capture_output=True, text=True, timeout=60,
                          env=None if env is None else {**os.environ, **env})


def refused(p, says, what):
    assert p.returncode != 0, (what, "exit 0", p.stdout, p.stderr)
    assert says in p.stderr, (what, p.returncode, p.stderr)
    assert "Traceback" not in p.stderr, (what, p.stderr)


def npy(path, shape, fortran=False):
    header = "{'descr': '<f4', 'fortran_order': %s, 'shape': (%s), }" % (
        fortran, "".join(f"{d}," for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    count = 1
    for d in shape:
        count *= d
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + b"\0" * (4 * count))
    return 10 + len(header)


def main():
    nuvec = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="nuvec_hostile_") as tmp:
        model = os.path.join(tmp, "tiny")
        assert run(nuvec, "demo-model", model, *TINY).returncode == 0

        # 1. A FIFO where a file is expected: refused at once (timeout 60 s).
        fifo = os.path.join(tmp, "f.safetensors")
        os.mkfifo(fifo)
        refused(run(nuvec, "inspect", fifo), "a FIFO (named pipe), not a regular file", "inspect fifo")
        refused(run(nuvec, "replay", fifo), "a FIFO", "replay fifo")
        refused(run(nuvec, "align", fifo, os.path.join(tmp, "out.safetensors")), "a FIFO", "align fifo")
        config = os.path.join(tmp, "fifo_model")
        os.mkdir(config)
        os.mkfifo(os.path.join(config, "config.json"))
        refused(run(nuvec, "run", config, "--prompt-ids", "1"), "a FIFO", "config.json fifo")
        refused(run(nuvec, "stats", env={"NUVEC_TRACE": fifo}), "NUVEC_TRACE", "NUVEC_TRACE fifo")

        # 2. nuvec plot: clear errors, never a traceback.
        trace = os.path.join(tmp, "trace.jsonl")
        with open(trace, "w") as f:
            f.write(json.dumps({"nuvec_trace": 1, "device": "cpu", "page_size": 4096, "source": "torch",
                                "dropped": 0}) + "\n")
            f.write(json.dumps({"seq": 0, "t_ns": 0, "thread": 1, "stream": 0, "event": "allocate", "id": 1,
                                "requested": 10, "size": 256, "hit": False}) + "\n")
        bad = os.path.join(tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write(open(trace).read() + '{"seq": 1, "event": "free", "id": 1, "size": "x"}\n')
        bomb = os.path.join(tmp, "bomb")  # gzip content, no .gz suffix, one endless line
        with gzip.open(bomb, "wb", compresslevel=1) as f:
            f.write(open(trace, "rb").read())
            for _ in range(8):
                f.write(b" " * (1 << 20))
        plots = [
            (["plot", trace, "-o", os.path.join(tmp, "no", "dir", "x.png")], "cannot write the picture"),
            (["plot", trace, "-o", tmp], "cannot write the picture"),
            (["plot", bad, "-o", os.path.join(tmp, "b.png")], "bad.jsonl:3: field 'size'"),
            (["plot", bomb, "-o", os.path.join(tmp, "c.png")], "bomb:3: a line longer than 1048576 bytes"),
        ]
        for args, says in plots:
            p = run(nuvec, *args)
            if p.returncode == 2 and "matplotlib is missing" in p.stderr:
                break  # no matplotlib here: the picture cannot be drawn at all
            refused(p, says, args)
        refused(run(nuvec, "replay", bomb), "line 3: longer than 1048576 bytes", "replay bomb")

        # 3. Command-line numbers: no wrap-around, bounds stated, cost told.
        for args, says in [
            (["--prompt-ids", "1", "--max-new", "-1"], "not a whole number"),
            (["--prompt-len", "-1"], "not a whole number"),
            (["--prompt-len", "1.5"], "not a whole number"),
            (["--prompt-len", "18446744073709551615", "--max-new", "2"], "out of range"),
            (["--prompt-len", "1e9"], "a context of 1000000032 positions"),
            (["--prompt-len", "1e9"], "of KV cache"),
            (["--prompt-ids", "1", "--context", "100000"], "past the model's max_position_embeddings (512"),
            (["--prompt-ids", "1", "--threads", "0"], "the CPUs this process may run on"),
            (["--prompt-ids", "1", "--threads", "-3"], "the CPUs this process may run on"),
            (["--prompt-ids", "1", "--threads", "2000"], "give 1 to"),
            (["--prompt-ids", "1", "--threads", "1e6"], "give 1 to"),
        ]:
            refused(run(nuvec, "run", model, *args), says, args)
        # The KV cache against the memory limit, before it is allocated.
        weights = os.path.getsize(os.path.join(model, "model.safetensors"))
        limit = str((weights + 4095) // 4096 * 4096 + 65536)  # the weights fit, 432 positions (221 KiB) do not
        refused(run(nuvec, "run", model, "--prompt-len", "400", env={"NUVEC_MEMORY_LIMIT": limit}),
                "of KV cache; the memory limit is", "kv cost")

        # 4. Environment: checked whenever set.
        refused(run(nuvec, "stats", env={"NUVEC_TRACE_EVENTS": "abc"}), "NUVEC_TRACE_EVENTS=abc", "events")
        refused(run(nuvec, "stats", env={"NUVEC_MEMORY_LIMIT": "1.5"}), "must be whole", "limit 1.5")
        # The quantized products' settings, refused on any CPU before a product runs.
        gguf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lm", "gguf", "fixtures",
                            "llama-Q4_K_M.gguf")
        for name, value, says in [("NUVEC_QUANT_PREFETCH", "abc", "a whole number of bytes from 0"),
                                  ("NUVEC_QUANT_PREFETCH", "", "a whole number of bytes from 0"),
                                  ("NUVEC_QUANT_PREFETCH", "-1", "a whole number of bytes from 0"),
                                  ("NUVEC_QUANT_PREFETCH", "65537", "to 65536"),
                                  ("NUVEC_QUANT_PREFETCH", "99999999999999999999999", "to 65536"),
                                  ("NUVEC_QUANT_DOT", "of", "expected on")]:
            p = run(nuvec, "run", gguf, "--prompt-ids", "1,2", "--max-new", "1", env={name: value})
            refused(p, f"{name}={value}: expected", (name, value))
            refused(p, says, (name, value))
        for name, value in [("NUVEC_QUANT_PREFETCH", "0"), ("NUVEC_QUANT_PREFETCH", "65536"),
                            ("NUVEC_QUANT_DOT", "off")]:
            p = run(nuvec, "run", gguf, "--prompt-ids", "1,2", "--max-new", "1", env={name: value})
            assert p.returncode == 0, (name, value, p.stderr)

        # 7. inspect says what a load really does, for npy too.
        a = os.path.join(tmp, "a.npy")
        offset = npy(a, (3, 4))
        info = json.loads(run(nuvec, "inspect", "--json", a).stdout)[0]
        assert info["load_path"] == "mapped" and info["adds"]["mapped"] == 4096, info
        assert info["tensors"][0]["offset"] == offset and info["tensors"][0]["shape"] == [3, 4], info
        f = os.path.join(tmp, "f.npy")
        npy(f, (2, 3), fortran=True)
        info = json.loads(run(nuvec, "inspect", "--json", f).stdout)[0]
        assert info["load_path"].startswith("refused: Fortran order"), info
        assert info["tensors"][0]["shape"] == [2, 3] and info["adds"]["mapped"] == 0, info
    print("hostile commands: all refused cleanly")


if __name__ == "__main__":
    main()
