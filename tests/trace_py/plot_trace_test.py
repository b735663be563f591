#!/usr/bin/env python3
"""tools/plot_trace.py draws a PNG from a tiny trace, with and without stats.

Exits 77 (ctest's SKIP_RETURN_CODE) when no python3 here has matplotlib;
scripts/install-deps.sh installs Debian's python3-matplotlib.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "tools", "plot_trace.py")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MiB = 1 << 20


def has_matplotlib(python):
    return subprocess.run([python, "-c", "import matplotlib"], capture_output=True).returncode == 0


def stats(active, cache=0, mapped=0, wired=0):
    return {"active": active, "peak": active, "active_with_mapped": active + mapped,
            "peak_with_mapped": active + mapped, "cache": cache, "memory_limit": 64 * MiB,
            "cache_limit": 64 * MiB, "system_allocations": 0, "wired_limit": 8 * MiB,
            "wired": wired, "mapped": mapped, "wired_mapped": 0}


def nuvec_trace():
    """A device's trace: map a file, two phases, a refusal, the cache filling."""
    header = {"nuvec_trace": 1, "device": "cpu", "page_size": 4096, "source": "nuvec",
              "dropped": 0}
    rows = [
        ("mark", {"label": "load"}, stats(0)),
        ("map", {"id": 1, "size": 20 * MiB, "label": "model.safetensors"}, stats(0, mapped=20 * MiB)),
        ("wire", {"id": 1, "size": 8 * MiB}, stats(0, mapped=20 * MiB, wired=8 * MiB)),
        ("mark", {"label": "prefill"}, stats(0, mapped=20 * MiB, wired=8 * MiB)),
        ("allocate", {"id": 2, "requested": 10 * MiB, "size": 10 * MiB, "hit": False},
         stats(10 * MiB, mapped=20 * MiB, wired=8 * MiB)),
        ("allocate", {"id": 3, "requested": 4 * MiB, "size": 4 * MiB, "hit": False},
         stats(14 * MiB, mapped=20 * MiB, wired=8 * MiB)),
        ("refuse", {"requested": 40 * MiB, "label": "allocate"},
         stats(14 * MiB, mapped=20 * MiB, wired=8 * MiB)),
        ("mark", {"label": "decode"}, stats(14 * MiB, mapped=20 * MiB, wired=8 * MiB)),
        ("free", {"id": 2, "size": 10 * MiB}, stats(4 * MiB, 10 * MiB, 20 * MiB, 8 * MiB)),
        ("allocate", {"id": 4, "requested": 9 * MiB, "size": 10 * MiB, "hit": True},
         stats(14 * MiB, 0, 20 * MiB, 8 * MiB)),
    ]
    events = []
    for seq, (kind, fields, st) in enumerate(rows):
        ev = {"seq": seq, "t_ns": 1000 * seq, "thread": 1, "stream": 0, "event": kind}
        ev.update(fields)
        ev["stats"] = st
        events.append(ev)
    return header, events


def torch_trace():
    """A converted trace: no stats, live bytes come from allocate and free."""
    header = {"nuvec_trace": 1, "device": "pytorch cuda:0", "page_size": 4096,
              "source": "torch", "dropped": 0}
    events = [
        {"seq": 0, "t_ns": 0, "thread": 1, "stream": 0, "event": "mark", "label": "step"},
        {"seq": 1, "t_ns": 10, "thread": 1, "stream": 0, "event": "allocate", "id": 1,
         "requested": 3 * MiB, "size": 3 * MiB, "hit": False},
        {"seq": 2, "t_ns": 20, "thread": 1, "stream": 0, "event": "allocate", "id": 2,
         "requested": MiB, "size": MiB, "hit": True},
        {"seq": 3, "t_ns": 30, "thread": 1, "stream": 0, "event": "free", "id": 1,
         "size": 3 * MiB},
    ]
    return header, events


def write(path, header, events):
    with open(path, "w", encoding="utf-8") as f:
        for line in [header] + events:
            f.write(json.dumps(line) + "\n")


class PlotTrace(unittest.TestCase):
    def plot(self, path, *extra):
        out = path + ".png"
        r = subprocess.run([sys.executable, TOOL, path, "-o", out, *extra],
                           capture_output=True, text=True)
        return r, out

    def assert_png(self, r, out):
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, "rb") as f:
            data = f.read()
        self.assertTrue(data.startswith(PNG_SIGNATURE), "not a PNG")
        self.assertGreater(len(data), 10_000, "suspiciously small picture")

    def test_a_nuvec_trace_with_stats(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "nuvec.jsonl")
            write(path, *nuvec_trace())
            for axis in ("events", "time"):
                r, out = self.plot(path, "--x", axis)
                self.assert_png(r, out)
                self.assertIn("3 phases, 1 refusals", r.stdout)
                self.assertIn("peak 34.00 MiB", r.stdout)  # active 14 + mapped 20

    def test_a_converted_trace_without_stats(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "torch.jsonl")
            write(path, *torch_trace())
            r, out = self.plot(path, "--title", "tiny")
            self.assert_png(r, out)
            self.assertIn("peak 4.00 MiB", r.stdout)

    def test_a_malformed_line_is_an_error_with_its_line_number(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.jsonl")
            header, events = torch_trace()
            write(path, header, events)
            with open(path, "a", encoding="utf-8") as f:
                f.write("{not json\n")
            r, out = self.plot(path)
            self.assertEqual(r.returncode, 1)
            self.assertIn("bad.jsonl:6:", r.stderr)
            self.assertFalse(os.path.exists(out))

    def test_an_unknown_version_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "v2.jsonl")
            header, events = torch_trace()
            write(path, dict(header, nuvec_trace=2), events)
            r, _ = self.plot(path)
            self.assertEqual(r.returncode, 1)
            self.assertIn("version 2", r.stderr)


if __name__ == "__main__":
    # plot_trace.py falls back to Debian's /usr/bin/python3 when the one that
    # runs it lacks matplotlib; skip only when neither has it.
    if not has_matplotlib(sys.executable) and not (
            os.path.exists("/usr/bin/python3") and has_matplotlib("/usr/bin/python3")):
        print("SKIP: matplotlib is missing (apt-get install python3-matplotlib, or run "
              "scripts/install-deps.sh)")
        sys.exit(77)
    unittest.main(verbosity=2)
