#!/usr/bin/env python3
"""tools/trace_from_torch.py on the checked-in snapshot gives the expected events."""

import gzip
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "tools", "trace_from_torch.py")
FIXTURE = os.path.join(HERE, "torch_snapshot.pickle")

spec = importlib.util.spec_from_file_location("trace_from_torch", TOOL)
tft = importlib.util.module_from_spec(spec)
sys.modules["trace_from_torch"] = tft  # dataclasses look their module up
spec.loader.exec_module(tft)
sys.path.insert(0, HERE)
import make_fixture  # noqa: E402

SEG = make_fixture.SEG

EXPECTED = [
    {"seq": 0, "t_ns": 0, "thread": 1, "stream": 0, "event": "mark", "label": "load"},
    {"seq": 1, "t_ns": 11000, "thread": 1, "stream": 0, "event": "allocate", "id": 1,
     "requested": 1000000, "size": 1000000, "hit": False, "addr": SEG},
    {"seq": 2, "t_ns": 20000, "thread": 1, "stream": 0, "event": "allocate", "id": 2,
     "requested": 4096, "size": 4096, "hit": True, "addr": SEG + 1000448},
    {"seq": 3, "t_ns": 40000, "thread": 1, "stream": 0, "event": "mark", "label": "compute"},
    {"seq": 4, "t_ns": 50000, "thread": 1, "stream": 7, "event": "allocate", "id": 3,
     "requested": 512, "size": 512, "hit": True, "addr": SEG + 1004544},
    {"seq": 5, "t_ns": 61000, "thread": 1, "stream": 0, "event": "free", "id": 1,
     "size": 1000000},
    {"seq": 6, "t_ns": 70000, "thread": 1, "stream": 0, "event": "allocate", "id": 4,
     "requested": 800000, "size": 800000, "hit": True, "addr": SEG},
    {"seq": 7, "t_ns": 80000, "thread": 1, "stream": 0, "event": "refuse",
     "requested": 1 << 40,
     "label": "PyTorch out of memory: 1099511627776 bytes asked, 123456789 bytes free on "
              "the device"},
    {"seq": 8, "t_ns": 91000, "thread": 1, "stream": 7, "event": "free", "id": 3, "size": 512},
    {"seq": 9, "t_ns": 100000, "thread": 1, "stream": 0, "event": "free", "id": 4,
     "size": 800000},
    {"seq": 10, "t_ns": 1000000, "thread": 1, "stream": 0, "event": "mark", "label": "end"},
]

HEADER = {"nuvec_trace": 1, "device": "pytorch cuda:0", "page_size": 4096, "source": "torch",
          "dropped": 0, "unmatched_frees": 1}


def read_jsonl(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


class Fixture(unittest.TestCase):
    def test_the_checked_in_fixture_is_what_make_fixture_builds(self):
        self.assertEqual(read_bytes(FIXTURE), pickle.dumps(make_fixture.snapshot(), protocol=4))


class Convert(unittest.TestCase):
    def setUp(self):
        self.snapshot = tft.load_snapshot(FIXTURE)

    def test_gives_the_expected_events(self):
        header, events, _ = tft.convert(self.snapshot)
        self.assertEqual(header, HEADER)
        self.assertEqual(events, EXPECTED)

    def test_summary(self):
        _, _, s = tft.convert(self.snapshot)
        self.assertEqual(s.device, 0)
        self.assertEqual(s.entries, 16)
        self.assertEqual(s.events, 11)
        self.assertEqual(s.counts, {"mark": 3, "allocate": 4, "free": 3, "refuse": 1})
        self.assertEqual(s.peak_live, 1000000 + 4096 + 512)
        self.assertEqual(s.peak_at_seq, 4)
        self.assertEqual(s.distinct_sizes, 4)
        self.assertEqual(s.distinct_sizes_at_peak, 3)
        self.assertEqual((s.live_at_end, s.live_bytes_at_end), (1, 4096))
        self.assertEqual((s.unmatched_frees, s.unmatched_free_bytes), (1, 65536))
        self.assertEqual(s.skipped, {"segment_alloc": 1, "segment_free": 1, "snapshot": 1})

    def test_frees_come_from_free_requested_when_no_free_completed_was_recorded(self):
        trace = [e for e in self.snapshot["device_traces"][0] if e["action"] != "free_completed"]
        snap = dict(self.snapshot, device_traces=[trace, []])
        _, events, s = tft.convert(snap)
        self.assertEqual(s.free_action, "free_requested")
        frees = [(e["id"], e["t_ns"]) for e in events if e["event"] == "free"]
        self.assertEqual(frees, [(1, 60000), (3, 90000), (4, 100000)])

    def test_external_annotations_become_marks_when_the_recorder_left_none(self):
        snap = {k: v for k, v in self.snapshot.items() if k != "nuvec_marks"}
        snap["external_annotations"] = [
            {"stage": "START", "name": "Optimizer.step#AdamW.step", "device": 0,
             "time_us": 1040},
            {"stage": "END", "name": "Optimizer.step#AdamW.step", "device": 0, "time_us": 1065},
            {"stage": "START", "name": "elsewhere", "device": 1, "time_us": 1041},
        ]
        _, events, _ = tft.convert(snap)
        marks = [(e["seq"], e["label"]) for e in events if e["event"] == "mark"]
        self.assertEqual(marks, [(2, "Optimizer.step#AdamW.step")])

    def test_an_address_reused_while_live_ends_the_old_block_first(self):
        trace = [{"action": "alloc", "addr": 4096, "size": 10, "stream": 0, "time_us": 5},
                 {"action": "alloc", "addr": 4096, "size": 20, "stream": 0, "time_us": 6},
                 {"action": "free_completed", "addr": 4096, "size": 20, "stream": 0,
                  "time_us": 7}]
        _, events, s = tft.convert({"device_traces": [trace]})
        self.assertEqual([(e["event"], e["id"]) for e in events],
                         [("allocate", 1), ("free", 1), ("allocate", 2), ("free", 2)])
        self.assertEqual(s.reallocated_live, 1)

    def test_picks_the_device_with_entries(self):
        snap = dict(self.snapshot, device_traces=[[], self.snapshot["device_traces"][0]])
        header, events, s = tft.convert(snap)
        self.assertEqual(s.device, 1)
        self.assertEqual(header["device"], "pytorch cuda:1")
        # The marks say device 0, so none of them belong to device 1.
        self.assertEqual([e for e in events if e["event"] == "mark"], [])

    def test_no_entries_is_an_error_that_says_how_to_record(self):
        with self.assertRaisesRegex(tft.SnapshotError, "_record_memory_history"):
            tft.convert({"device_traces": [[], []]})


class CommandLine(unittest.TestCase):
    def test_writes_gzip_and_plain_traces_and_reports(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("t.jsonl", "t.jsonl.gz"):
                out = os.path.join(d, name)
                r = run_tool(FIXTURE, "-o", out)
                self.assertEqual(r.returncode, 0, r.stderr)
                lines = read_jsonl(out)
                self.assertEqual(lines[0], HEADER)
                self.assertEqual(lines[1:], EXPECTED)
                self.assertIn("11 events", r.stdout)
                self.assertIn("peak live", r.stdout)
                self.assertIn("4 distinct sizes", r.stdout)
                self.assertIn("dropped 1 frees", r.stderr)
            # The same snapshot gives the same bytes (no time stamp in the gzip).
            first = read_bytes(os.path.join(d, "t.jsonl.gz"))
            run_tool(FIXTURE, "-o", os.path.join(d, "t.jsonl.gz"))
            self.assertEqual(read_bytes(os.path.join(d, "t.jsonl.gz")), first)

    def test_reads_a_gzipped_snapshot(self):
        with tempfile.TemporaryDirectory() as d:
            snap = os.path.join(d, "s.pickle.gz")
            with gzip.open(snap, "wb") as f:
                f.write(read_bytes(FIXTURE))
            r = run_tool(snap, "-o", "-")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual([json.loads(x) for x in r.stdout.splitlines()][1:], EXPECTED)

    def test_refuses_a_pickle_that_names_a_class(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.pickle")
            with open(bad, "wb") as f:
                pickle.dump({"device_traces": [[]], "x": unittest.TestCase}, f)
            r = run_tool(bad, "-o", os.path.join(d, "out.jsonl"))
            self.assertEqual(r.returncode, 1)
            self.assertIn("unittest.case.TestCase", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "out.jsonl")))

    def test_a_file_that_is_not_a_snapshot_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "list.pickle")
            with open(bad, "wb") as f:
                pickle.dump([1, 2, 3], f)
            r = run_tool(bad, "-o", "-")
            self.assertEqual(r.returncode, 1)
            self.assertIn("no 'device_traces'", r.stderr)
            r = run_tool(os.path.join(d, "missing.pickle"), "-o", "-")
            self.assertEqual(r.returncode, 1)
            self.assertIn("cannot read", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
