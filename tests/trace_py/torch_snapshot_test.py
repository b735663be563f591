#!/usr/bin/env python3
"""`nuvec export --format torch-snapshot|torch-segments`, read by PyTorch's own viewer.

    torch_snapshot_test.py NUVEC      (NUVEC: the nuvec command, e.g. build/release/tools/nuvec)

Inputs: a CPU model run the test records with the tool (`nuvec demo-model`,
`nuvec run` with NUVEC_TRACE), cut after the first decode step so that
buffers are live, cached and mapped, and cut at the prefill mark (compare's
"before"); and a converted PyTorch trace of traces/. Each is exported in
both shapes. Every subcommand of `python3 -m torch.cuda._memory_viz` that
this PyTorch has is run on them as a user runs it (memory_viz_cli.py) and
what it prints is checked against what the trace says (trace_truth.py):
1.13 (Debian 12's python3-torch) has stats, segments, memory and compare and
reads the segments shape; 2.x adds trace, trace_plot and segment_plot, which
read the snapshot shape. A subcommand the test does not know fails it.
Also: the files load with an unpickler that refuses every class; the end
state is the trace's last statistics; buffers keep their address and tag;
tools/trace_from_torch.py reads a snapshot back. Exits 77 (ctest: skipped)
where this python has no torch (scripts/install-deps.sh installs Debian's).
"""

import ast
import io
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from memory_viz_cli import PLOT_KINDS, MemoryViz, embedded_snapshot, folded, segsum, stats_113  # noqa: E402
from trace_truth import TraceTruth, read_trace  # noqa: E402

ROOT = os.path.join(HERE, "..", "..")
FROM_TORCH = os.path.join(ROOT, "tools", "trace_from_torch.py")
# The converted training step (3,587 allocations); not the generate trace's
# 26,271, each a segment of its own, through 2.x's `trace`, which looks each
# allocation's segment up among all the segments made before it.
FIXTURES = [os.path.join(ROOT, "traces", "llama_train_step.jsonl.gz")]
NUVEC = None
# Each subcommand's check; what a torch offers beyond these fails the test.
SUBCOMMANDS = ("stats", "segments", "memory", "compare", "trace", "trace_plot", "segment_plot")
TRACE_READERS = ("trace", "trace_plot", "segment_plot")  # 2.x's, of device_traces: the snapshot shape only


class PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"the snapshot names a class, {module}.{name}")


def load(path_or_bytes):
    if isinstance(path_or_bytes, bytes):
        return PlainUnpickler(io.BytesIO(path_or_bytes)).load()
    with open(path_or_bytes, "rb") as f:
        return PlainUnpickler(f).load()


def memory_viz():
    import torch.cuda._memory_viz as viz
    return viz


def cut(src, dst, label, after):
    """src up to `after` events past the mark `label`."""
    with open(src) as f, open(dst, "w") as out:
        lines = f.readlines()
        at = next(i for i, line in enumerate(lines) if f'"label":"{label}"' in line)
        out.writelines(lines[:at + 1 + after])


class Export:
    """A trace, what it says, and its two exports."""

    def __init__(self, name, trace, folder):
        self.name = name
        self.trace = trace
        self.header, self.events = read_trace(trace)
        self.truth = TraceTruth(self.header, self.events)
        self.files = {}
        for shape in ("snapshot", "segments"):
            path = os.path.join(folder, f"{name}.{shape}.pickle")
            p = subprocess.run([NUVEC, "export", "--format", f"torch-{shape}", trace, "-o", path],
                               capture_output=True, text=True)
            assert p.returncode == 0, p.stderr
            assert p.stdout.startswith(f"wrote {path}"), p.stdout
            self.files[shape] = path

    def segments(self, shape):
        data = load(self.files[shape])
        return data if shape == "segments" else data["segments"]


class TorchSnapshot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        model, whole = os.path.join(d, "model"), os.path.join(d, "run.jsonl")
        subprocess.run([NUVEC, "demo-model", model], check=True, capture_output=True)
        subprocess.run([NUVEC, "run", model, "--prompt-len", "16", "--max-new", "4"], check=True,
                       capture_output=True, env={**os.environ, "NUVEC_TRACE": whole})
        # At its end the run has freed everything: cut after the first decode
        # step's frees (as an OutOfMemory there would have written it) it has
        # buffers live, cached and mapped; at the prefill mark, less.
        cut(whole, os.path.join(d, "cpu_run.jsonl"), "decode", 3)
        cut(whole, os.path.join(d, "cpu_prefill.jsonl"), "prefill", 0)
        cls.cpu = Export("cpu_run", os.path.join(d, "cpu_run.jsonl"), d)
        cls.prefill = Export("cpu_prefill", os.path.join(d, "cpu_prefill.jsonl"), d)
        cls.inputs = [cls.cpu] + [Export(os.path.basename(t).split(".")[0], t, d) for t in FIXTURES]
        cls.viz = MemoryViz(sys.executable, os.path.join(d, "viz"))
        cls.subcommands = cls.viz.subcommands()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def out(self, name):
        return os.path.join(self.tmp.name, name)

    def run_ok(self, *args):
        p = self.viz.run(*args)
        self.assertEqual(p.returncode, 0, f"_memory_viz {' '.join(args)}:\n{p.stderr[-3000:]}")
        return p

    def shapes_for(self, subcommand):
        """The exports this PyTorch's subcommand reads: 1.13 reads only a list
        of segments; 2.x reads both, but its trace readers need the dict."""
        if "trace" not in self.subcommands:
            return ["segments"]
        return ["snapshot"] if subcommand in TRACE_READERS else ["snapshot", "segments"]

    # -- the files themselves --------------------------------------------------

    def test_the_end_state_is_what_the_trace_says(self):
        t = self.cpu.truth
        self.assertTrue(t.active and t.cached and t.mapped, "the cut run has live, cached and mapped bytes")
        self.assertEqual((t.active, t.cached, t.mapped), (t.stats["active"], t.stats["cache"], t.stats["mapped"]))
        for e in self.inputs:
            segments = e.segments("segments")
            blocks = [b for s in segments for b in s["blocks"]]
            mapped = sum(b["size"] for b in blocks if any(f["name"] == "mapped file" for f in b["frames"]))
            active = sum(b["size"] for b in blocks if b["state"] == "active_allocated") - mapped
            inactive = sum(b["size"] for b in blocks if b["state"] == "inactive")
            self.assertEqual((active, inactive, mapped), (e.truth.active, e.truth.cached, e.truth.mapped), e.name)
            for s in segments:
                self.assertEqual(s["total_size"], sum(b["size"] for b in s["blocks"]))
                addr = s["address"]
                for b in s["blocks"]:  # each block where the one before it ends
                    self.assertEqual(b["address"], addr)
                    addr += b["size"]
            # The two shapes hold the same segments, the list with 1.13's history.
            without_history = [{**s, "blocks": [{k: v for k, v in b.items() if k != "history"} for b in s["blocks"]]}
                               for s in segments]
            self.assertEqual(without_history, e.segments("snapshot"), e.name)
            for b in blocks:
                if b["state"] == "active_allocated":
                    self.assertEqual(b["history"], [{"addr": b["address"], "real_size": b["requested_size"],
                                                     "frames": b["frames"]}])

    def test_buffers_keep_their_address_and_tag(self):
        data = load(self.cpu.files["snapshot"])
        allocs = [e for e in data["device_traces"][0] if e["action"] == "alloc"]
        ours = [e for e in self.cpu.events if e["event"] in ("allocate", "map")]
        self.assertEqual(len(allocs), len(ours))
        for a, e in zip(allocs, ours):
            self.assertEqual((a["addr"], a["size"]), (e["id"], e["size"]))
            tags = [f["name"] for f in a["frames"] if f["filename"] == "tag"]
            self.assertEqual(tags, [e["tag"]] if e.get("tag") else [])
        tags = {f["name"] for a in allocs for f in a["frames"] if f["filename"] == "tag"}
        self.assertTrue({"weights", "kv_cache", "activations", "scratch", "logits"} <= tags, tags)
        marks = [a["name"] for a in data["external_annotations"]]
        self.assertEqual(marks, [e["label"] for e in self.cpu.events if e["event"] == "mark"])

    def test_a_converted_traces_buffers_are_segments_of_their_own(self):
        for e in self.inputs[1:]:
            segments = e.segments("segments")
            self.assertEqual(len(segments), len(e.truth.live) + len(e.truth.mapped_files), e.name)
            self.assertEqual(e.truth.cached, 0)
            ends = sorted((s["address"], s["address"] + s["total_size"]) for s in segments)
            self.assertTrue(all(a[1] <= b[0] for a, b in zip(ends, ends[1:])), f"{e.name}: segments overlap")

    def test_trace_from_torch_reads_it_back(self):
        back = self.out("back.jsonl")
        p = subprocess.run([sys.executable, FROM_TORCH, self.cpu.files["snapshot"], "-o", back],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        _, events = read_trace(back)
        # A mapping is an alloc and a free in PyTorch's terms.
        as_torch = {"allocate": "allocate", "map": "allocate", "free": "free", "unmap": "free"}
        mine = [(as_torch[e["event"]], e["size"]) for e in self.cpu.events if e["event"] in as_torch]
        theirs = [(e["event"], e["size"]) for e in events if e["event"] in ("allocate", "free")]
        self.assertEqual(mine, theirs)
        self.assertEqual([e["label"] for e in events if e["event"] == "mark"],
                         [e["label"] for e in self.cpu.events if e["event"] == "mark"])

    # -- PyTorch's viewer, subcommand by subcommand ----------------------------

    def test_every_subcommand_of_this_torch_is_checked(self):
        self.assertIn("stats", self.subcommands)
        self.assertEqual([s for s in self.subcommands if s not in SUBCOMMANDS], [],
                         "a _memory_viz subcommand this test does not check")

    def each(self, subcommand, check):
        """check(export, shape) for every input this PyTorch's subcommand reads; skipped where it has none."""
        if subcommand not in self.subcommands:
            self.skipTest(f"this PyTorch's _memory_viz has no {subcommand} (it has {', '.join(self.subcommands)})")
        for e in self.inputs:
            for shape in self.shapes_for(subcommand):
                with self.subTest(trace=e.name, shape=shape):
                    check(e, shape)

    def B(self, n):
        return repr(memory_viz().Bytes(n))

    def test_stats(self):
        def check(e, shape):
            t = e.truth
            p = self.run_ok("stats", e.files[shape])
            n = str(len(e.segments(shape)))
            if "trace" in self.subcommands:  # 2.x: segsum's totals (allocated: the bytes asked for)
                got = segsum(p.stdout)
                self.assertEqual((got["segments"], got["total_reserved"], got["total_allocated"]),
                                 (n, self.B(t.total), self.B(t.requested + t.mapped)), p.stdout)
                self.assertTrue(got["total_free"].startswith(self.B(t.active + t.cached - t.requested)), p.stdout)
            else:  # 1.13: bytes by block state
                want = {"active_allocated": self.B(t.active + t.mapped), "segments": n, "total_size": self.B(t.total)}
                if t.cached:
                    want["inactive"] = self.B(t.cached)
                self.assertEqual(stats_113(p.stdout), want, p.stdout)
        self.each("stats", check)

    def check_folded(self, e, rows, per_segment):
        t = e.truth
        addresses = {f"seg_{s['address']}" for s in e.segments("segments")}
        for stack, _ in rows:
            self.assertTrue(stack[0].startswith("stream_"), stack)
            if per_segment:
                self.assertIn(stack[1], addresses)
        state = 2 if per_segment else 1
        self.assertEqual(sum(n for _, n in rows), t.total)
        self.assertEqual(sum(n for s, n in rows if s[state] == "active_allocated"), t.active + t.mapped)
        self.assertEqual(sum(n for s, n in rows if s[state] == "inactive"), t.cached)
        self.assertEqual(sum(n for s, n in rows if s[-1].endswith(":0:mapped file")), t.mapped)
        for tag, amount in t.by_tag.items():
            self.assertEqual(sum(n for s, n in rows if f"tag:0:{tag}" in s), amount, tag)

    def test_segments(self):
        def check(e, shape):
            out = self.out(f"{e.name}.{shape}.segments")
            self.run_ok("segments", e.files[shape], "-o", out)
            self.check_folded(e, folded(out), per_segment=True)
        self.each("segments", check)

    def test_memory(self):
        def check(e, shape):
            out = self.out(f"{e.name}.{shape}.memory")
            self.run_ok("memory", e.files[shape], "-o", out)
            self.check_folded(e, folded(out), per_segment=False)
        self.each("memory", check)

    def test_compare(self):
        if "compare" not in self.subcommands:
            self.skipTest("this PyTorch's _memory_viz has no compare")
        before, after = self.prefill, self.cpu
        for shape in self.shapes_for("compare"):
            with self.subTest(shape=shape):
                out = self.out(f"compare.{shape}")
                p = self.viz.run("compare", before.files[shape], after.files[shape], "-o", out)
                if p.returncode != 0 and "string indices must be integers" in p.stderr and "trace" in self.subcommands:
                    # 2.x's compare iterates what its reader returns, a dict
                    # for every input (a list is wrapped in one): PyTorch's own
                    # snapshots fail the same way.
                    self.skipTest("PyTorch 2.x's compare reads no snapshot (it iterates the dict's keys)")
                self.assertEqual(p.returncode, 0, p.stderr[-3000:])
                lists = dict(line.split(" = ", 1) for line in p.stdout.splitlines() if " = " in line)
                only_before, only_after = ast.literal_eval(lists["only_before"]), ast.literal_eval(lists["only_after"])
                weights = next(iter(after.truth.mapped_files))
                self.assertTrue(weights not in only_before and weights not in only_after,
                                "the weights' mapping is in both, unchanged")
                self.assertTrue(only_after, p.stdout)
                rows = folded(out)
                self.assertEqual({s[0] for s, _ in rows}, {"only_before", "only_after"} if only_before
                                 else {"only_after"})
                grown = sum(n for s, n in rows if s[0] == "only_after") - sum(n for s, n in rows if s[0] == "only_before")
                self.assertEqual(grown, after.truth.total - before.truth.total)

    def test_trace(self):
        def check(e, shape):
            t = e.truth
            p = self.run_ok("trace", e.files[shape])
            lines = p.stdout.splitlines()
            self.assertEqual(lines[0], "Device 0 ----------------")
            self.assertEqual(lines[1], f"{t.trace_entries()} entries")
            count = lambda pred: sum(1 for line in lines[2:] if pred(line))  # noqa: E731
            self.assertEqual(count(lambda l: " = cudaMalloc(" in l), t.counts["miss"] + t.counts["map"])
            self.assertEqual(count(lambda l: " = " in l and "[" in l and "cudaMalloc" not in l),
                             t.counts["allocate"] + t.counts["map"])
            self.assertEqual(count(lambda l: l.startswith("del ")), t.counts["free"] + t.counts["unmap"])
            self.assertEqual(count(lambda l: l.startswith("cudaFree(")), t.segment_frees())
            self.assertEqual(count(lambda l: l.startswith("raise OutOfMemoryError")), t.counts["refuse"])
        self.each("trace", check)

    def check_plot(self, subcommand):
        def check(e, shape):
            out = self.out(f"{e.name}.{subcommand}.html")
            self.run_ok(subcommand, e.files[shape], "-o", out)
            with open(out) as f:
                html = f.read()
            self.assertIn(repr(PLOT_KINDS[subcommand]), html)
            self.assertEqual(load(embedded_snapshot(html)), load(e.files[shape]))
        self.each(subcommand, check)

    def test_trace_plot(self):
        self.check_plot("trace_plot")

    def test_segment_plot(self):
        self.check_plot("segment_plot")


def main():
    global NUVEC
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    NUVEC = os.path.abspath(sys.argv.pop(1))
    try:
        viz = memory_viz()
    except ImportError as e:
        print(f"skipped: no torch here ({e}); scripts/install-deps.sh installs Debian's python3-torch")
        return 77
    import torch
    print(f"torch {torch.__version__} ({viz.__file__})")
    result = unittest.main(exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
