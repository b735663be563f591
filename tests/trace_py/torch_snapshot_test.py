#!/usr/bin/env python3
"""`nuvec export --format torch-snapshot`, checked with PyTorch's own viewer.

    torch_snapshot_test.py NUVEC
    torch_snapshot_test.py --check TRACE SNAPSHOT   (the checks alone, on files made elsewhere)

On a trace recorded by `nuvec run` (a model load, a KV cache, prefill and
decode): the snapshot loads with an unpickler that refuses every class; its
end state agrees with the trace's last statistics (active, cache and mapped
bytes); each buffer keeps its address and its tag as a frame; PyTorch's
torch.cuda._memory_viz reads it: `stats` (its segment summary, with its own
consistency asserts), `trace`, `trace_plot` and the `segments` flamegraph
input, where this PyTorch has them (2.x), or its 1.13 `stats` and `segments`
on the segment list (Debian 12's python3-torch); and tools/trace_from_torch.py
turns it back into the trace's allocations, frees and marks. Exits 77
(ctest: skipped) where no python3 has torch (scripts/install-deps.sh installs
Debian's python3-torch).
"""

import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FROM_TORCH = os.path.join(HERE, "..", "..", "tools", "trace_from_torch.py")
NUVEC = None
FILES = None  # (trace, snapshot) given with --check


class PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"the snapshot names a class, {module}.{name}")


def load(path):
    with open(path, "rb") as f:
        return PlainUnpickler(f).load()


def read_trace(path):
    with open(path) as f:
        header = json.loads(next(f))
        return header, [json.loads(line) for line in f]


def memory_viz():
    import torch.cuda._memory_viz as viz
    return viz


class TorchSnapshot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        if FILES:
            cls.trace, cls.snapshot = FILES
            return
        model = os.path.join(d, "model")
        whole = os.path.join(d, "run.jsonl")
        cls.snapshot = os.path.join(d, "snapshot.pickle")
        subprocess.run([NUVEC, "demo-model", model], check=True, capture_output=True)
        subprocess.run([NUVEC, "run", model, "--prompt-len", "16", "--max-new", "4"], check=True,
                       capture_output=True, env={**os.environ, "NUVEC_TRACE": whole})
        # At its end the run has freed everything: the trace up to the first
        # decode step's end (as an OutOfMemory there would have written it)
        # ends with buffers live, cached and mapped.
        cls.trace = os.path.join(d, "until_decode.jsonl")
        with open(whole) as f, open(cls.trace, "w") as out:
            lines = f.readlines()
            decode = next(i for i, line in enumerate(lines) if '"label":"decode"' in line)
            out.writelines(lines[:decode + 4])
        p = subprocess.run([NUVEC, "export", "--format", "torch-snapshot", cls.trace, "-o", cls.snapshot],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert "wrote" in p.stdout, p.stdout

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.header, self.events = read_trace(self.trace)
        self.data = load(self.snapshot)

    def test_the_end_state_is_the_traces_last_statistics(self):
        last = self.events[-1]["stats"]
        self.assertTrue(last["active"] and last["cache"] and last["mapped"], last)
        blocks = [(s, b) for s in self.data["segments"] for b in s["blocks"]]
        mapped = sum(b["size"] for s, b in blocks if any(f["name"] == "mapped file" for f in b["frames"]))
        active = sum(b["size"] for s, b in blocks if b["state"] == "active_allocated") - mapped
        inactive = sum(b["size"] for s, b in blocks if b["state"] == "inactive")
        self.assertEqual((active, inactive, mapped), (last["active"], last["cache"], last["mapped"]))
        for s in self.data["segments"]:
            self.assertEqual(s["total_size"], sum(b["size"] for b in s["blocks"]))
            addr = s["address"]
            for b in s["blocks"]:  # each block where the one before it ends
                self.assertEqual(b["address"], addr)
                addr += b["size"]

    def test_buffers_keep_their_address_and_tag(self):
        allocs = [e for e in self.data["device_traces"][0] if e["action"] == "alloc"]
        ours = [e for e in self.events if e["event"] in ("allocate", "map")]
        self.assertEqual(len(allocs), len(ours))
        for a, e in zip(allocs, ours):
            self.assertEqual((a["addr"], a["size"]), (e["id"], e["size"]))
            tags = [f["name"] for f in a["frames"] if f["filename"] == "tag"]
            self.assertEqual(tags, [e["tag"]] if e.get("tag") else [])
        tags = {f["name"] for a in allocs for f in a["frames"] if f["filename"] == "tag"}
        self.assertTrue({"weights", "kv_cache", "activations", "scratch", "logits"} <= tags, tags)
        marks = [a["name"] for a in self.data["external_annotations"]]
        self.assertEqual(marks, [e["label"] for e in self.events if e["event"] == "mark"])

    def test_pytorchs_memory_viz_reads_it(self):
        viz = memory_viz()
        lines = []
        if hasattr(viz, "trace_plot"):  # PyTorch 2.x: the snapshot dict
            for view in (["stats"], ["trace"], ["trace_plot", "-o", os.path.join(self.tmp.name, "t.html")],
                         ["segment_plot", "-o", os.path.join(self.tmp.name, "s.html")]):
                p = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", view[0], self.snapshot]
                                   + view[1:], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, f"{view}: {p.stderr[-3000:]}")
                if view[0] == "stats":
                    self.assertIn(f"segments: {len(self.data['segments'])}", p.stdout)
                if view[0] == "trace":
                    self.assertIn("cudaMalloc(", p.stdout)
            self.assertGreater(os.path.getsize(os.path.join(self.tmp.name, "t.html")), 1000)
            viz.segments(self.data, format_flamegraph=lines.append)
        else:  # PyTorch 1.13 (Debian 12): the segment list alone
            summary = viz.stats(self.data["segments"])
            self.assertEqual(summary["segments"], len(self.data["segments"]))
            self.assertEqual(summary["active_allocated"].value,
                             sum(b["size"] for s in self.data["segments"] for b in s["blocks"]
                                 if b["state"] == "active_allocated"))
            viz.segments(self.data["segments"], format_flamegraph=lines.append)
        self.assertEqual(len(lines), 1)
        self.assertEqual(sum(int(l.rsplit(" ", 1)[1]) for l in lines[0].splitlines()),
                         sum(s["total_size"] for s in self.data["segments"]))

    def test_trace_from_torch_reads_it_back(self):
        back = os.path.join(self.tmp.name, "back.jsonl")
        p = subprocess.run([sys.executable, FROM_TORCH, self.snapshot, "-o", back], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        _, events = read_trace(back)
        # A mapping is an alloc and a free in PyTorch's terms.
        as_torch = {"allocate": "allocate", "map": "allocate", "free": "free", "unmap": "free"}
        mine = [(as_torch[e["event"]], e["size"]) for e in self.events if e["event"] in as_torch]
        theirs = [(e["event"], e["size"]) for e in events if e["event"] in ("allocate", "free")]
        self.assertEqual(mine, theirs)
        self.assertEqual([e["label"] for e in events if e["event"] == "mark"],
                         [e["label"] for e in self.events if e["event"] == "mark"])


def main():
    global NUVEC, FILES
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        FILES = (sys.argv[2], sys.argv[3])
        del sys.argv[1:]
    elif len(sys.argv) == 2:
        NUVEC = sys.argv.pop(1)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        memory_viz()
    except ImportError as e:
        print(f"skipped: no torch here ({e}); scripts/install-deps.sh installs Debian's python3-torch")
        return 77
    result = unittest.main(exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
