#!/usr/bin/env python3
"""`nuvec plot --html` in a real headless browser (Debian's chromium).

    plot_html_test.py NUVEC

On a known trace (tags with known sizes, so a known peak): the page is one
file with no network use; chromium's DOM after the page's script ran shows
the trace's peak figure, the tags stacked largest first and what was live at
the peak; a pointer moved over the kv_cache band at the peak shows that
block's size, tag, lifetime and stream; and a screenshot shows each tag's
colour, the largest band the most. The same checks of the peak run on a
trace recorded by `nuvec run`. Exits 77 (ctest: skipped) only where chromium
is missing or cannot start; scripts/install-deps.sh installs it.
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

NUVEC = None
MiB = 1 << 20
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                  "--allow-file-access-from-files", "--disable-dev-shm-usage"]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(args, timeout=120):
    return subprocess.run([chromium()] + CHROMIUM_FLAGS + args, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "HOME": tempfile.gettempdir()})


def dump_dom(page):
    p = run_chromium(["--virtual-time-budget=3000", "--dump-dom", "file://" + page])
    if p.returncode != 0:
        raise AssertionError(f"chromium --dump-dom failed ({p.returncode}): {p.stderr[-2000:]}")
    return p.stdout


def stats(active, mapped=0, cache=0):
    return {"active": active, "peak": active, "active_with_mapped": active + mapped,
            "peak_with_mapped": active + mapped, "cache": cache, "memory_limit": 1 << 30,
            "cache_limit": 1 << 30, "system_allocations": 0, "wired_limit": 0, "wired": 0,
            "mapped": mapped, "wired_mapped": 0}


# The known trace: weights mapped (64 MiB), then a KV cache (16 MiB),
# activations (8 MiB), scratch (4 MiB) and logits (1 MiB) at once: the peak,
# 93 MiB, is when all five are live; then scratch is freed into the cache.
PEAK = (64 + 16 + 8 + 4 + 1) * MiB
KV_CACHE_ID = 0x7f0000100000


def known_trace(path):
    rows, active, mapped, cache = [], 0, 0, 0

    def event(kind, **fields):
        rows.append(dict(fields, event=kind, stats=stats(active, mapped, cache)))

    event("mark", label="load")
    mapped += 64 * MiB
    event("map", id=0x5555000, requested=64 * MiB, size=64 * MiB, label="/models/m/model.safetensors",
          tag="weights")
    event("mark", label="prefill")
    blocks = [(KV_CACHE_ID, 16, "kv_cache"), (0x7f0001100000, 8, "activations"),
              (0x7f0001900000, 4, "scratch"), (0x7f0001d00000, 1, "logits")]
    for bid, mib, tag in blocks:
        active += mib * MiB
        event("allocate", id=bid, requested=mib * MiB - 100, size=mib * MiB, hit=False, tag=tag)
    active -= 4 * MiB
    cache += 4 * MiB
    event("free", id=0x7f0001900000, size=4 * MiB, tag="scratch")
    event("mark", label="decode")
    for step in range(3):
        active += 4 * MiB
        cache -= 4 * MiB
        event("allocate", id=0x7f0001900000, requested=3 * MiB, size=4 * MiB, hit=True, tag="scratch")
        active -= 4 * MiB
        cache += 4 * MiB
        event("free", id=0x7f0001900000, size=4 * MiB, tag="scratch")
    with open(path, "w") as f:
        f.write(json.dumps({"nuvec_trace": 1, "device": "cpu", "page_size": 4096, "source": "nuvec",
                            "dropped": 0}) + "\n")
        for i, r in enumerate(rows):
            f.write(json.dumps(dict(seq=i, t_ns=1_000_000 * (i + 1), thread=1, stream=0, **r)) + "\n")


def peak_of(trace_path):
    """max(active + mapped) over the trace's events, and the event's seq."""
    best, seq = -1, None
    with open(trace_path) as f:
        next(f)
        for line in f:
            e = json.loads(line)
            v = e["stats"]["active"] + e["stats"]["mapped"]
            if v > best:
                best, seq = v, e["seq"]
    return best, seq


def png_pixels(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), f"PNG depth {depth} colour type {color}"
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def colour_counts(path, colours):
    width, height, channels, rows = png_pixels(path)
    wanted = {c: 0 for c in colours}
    for row in rows:
        for x in range(width):
            px = tuple(row[x * channels:x * channels + 3])
            if px in wanted:
                wanted[px] += 1
    return wanted


def legend(dom):
    """(tag, (r, g, b)) of each legend item, in order."""
    out = []
    for tag, style in re.findall(r'<span class="item" data-tag="([^"]*)"><span class="swatch" style="([^"]*)"', dom):
        m = re.search(r"rgb\((\d+), (\d+), (\d+)\)", style) or re.search(r"#([0-9a-f]{6})", style)
        rgb = tuple(int(g) for g in m.groups()) if len(m.groups()) == 3 else \
            tuple(int(m.group(1)[i:i + 2], 16) for i in (0, 2, 4))
        out.append((tag, rgb))
    return out


class PlotHtml(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def plot(self, trace, page):
        p = subprocess.run([NUVEC, "plot", trace, "--html", page], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(page, encoding="utf-8") as f:
            return f.read()

    def test_the_known_trace(self):
        trace = os.path.join(self.dir, "known.jsonl")
        known_trace(trace)
        page = os.path.join(self.dir, "known.html")
        html = self.plot(trace, page)
        # One file, no network: nothing fetched from anywhere.
        self.assertNotRegex(html, r"<script[^>]+src=|<link[^>]+href=|https?://|@import")

        dom = dump_dom(page)
        self.assertIn(f"peak_with_mapped 93.0 MiB ({PEAK} bytes)", dom)
        tags = legend(dom)
        self.assertEqual([t for t, _ in tags], ["weights", "kv_cache", "activations", "scratch", "logits", "cache"])
        # What was live at the peak, largest first.
        sizes = re.findall(r'<td class="num">([^<]+)</td><td>([^<]+)</td>', dom)
        self.assertEqual(sizes, [("64.0 MiB", "weights"), ("16.0 MiB", "kv_cache"), ("8.00 MiB", "activations"),
                                 ("4.00 MiB", "scratch"), ("1.00 MiB", "logits")])

        # Hover: the pointer over the middle of the kv_cache band at the peak.
        probe = page.replace(".html", "-hover.html")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(html.replace("</body>", """<script>
  const t = window.nuvecTimeline;
  const p = t.pointAt(t.peakEvent, (64 + 8) * 1048576);
  document.getElementById("canvas").dispatchEvent(new MouseEvent("mousemove", {clientX: p.x, clientY: p.y, bubbles: true}));
  const out = document.createElement("pre");
  out.id = "hover-result";
  out.textContent = document.getElementById("tooltip").textContent;
  document.body.append(out);
</script></body>"""))
        hover = re.search(r'<pre id="hover-result">(.*?)</pre>', dump_dom(probe), re.S).group(1)
        self.assertIn("16.0 MiB (16777216 bytes; 16777116 asked for)", hover)
        self.assertIn("tag: kv_cache", hover)
        self.assertIn("stream: 0", hover)
        self.assertIn("lifetime: from event 3, 4.000 ms to still live at the end", hover)

        # The screenshot: every tag's colour drawn, the weights' band the largest.
        shot = os.path.join(self.dir, "known.png")
        p = run_chromium([f"--screenshot={shot}", "--window-size=1200,800", "--virtual-time-budget=3000",
                          "file://" + page])
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        counts = colour_counts(shot, [rgb for _, rgb in tags])
        by_tag = {tag: counts[rgb] for tag, rgb in tags}
        for tag, n in by_tag.items():
            self.assertGreater(n, 300, f"{tag}: {n} pixels of its colour in the screenshot ({by_tag})")
        self.assertEqual(max(by_tag, key=by_tag.get), "weights", by_tag)
        self.assertGreater(by_tag["kv_cache"], by_tag["logits"], by_tag)
        if os.environ.get("NUVEC_KEEP_SCREENSHOT"):
            shutil.copy(shot, os.environ["NUVEC_KEEP_SCREENSHOT"])

    def test_a_recorded_trace_shows_its_peak(self):
        model = os.path.join(self.dir, "model")
        trace = os.path.join(self.dir, "run.jsonl")
        subprocess.run([NUVEC, "demo-model", model], check=True, capture_output=True)
        p = subprocess.run([NUVEC, "run", model, "--prompt-len", "8", "--max-new", "4"], capture_output=True,
                           text=True, env={**os.environ, "NUVEC_TRACE": trace})
        self.assertEqual(p.returncode, 0, p.stderr)
        peak, seq = peak_of(trace)
        page = os.path.join(self.dir, "run.html")
        self.plot(trace, page)
        dom = dump_dom(page)
        self.assertIn(f"({peak} bytes) at event {seq},", dom)
        present = {t for t, _ in legend(dom)}
        self.assertTrue({"weights", "kv_cache", "activations", "scratch", "logits"} <= present, present)


def main():
    global NUVEC
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    NUVEC = sys.argv.pop(1)
    if chromium() is None:
        print("skipped: no chromium here (scripts/install-deps.sh installs Debian's chromium)")
        return 77
    try:
        p = run_chromium(["--dump-dom", "about:blank"], timeout=60)
        runs = p.returncode == 0 and "<html" in p.stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        runs, p = False, e
    if not runs:
        print(f"skipped: chromium cannot start here: {getattr(p, 'stderr', p)!s:.500}")
        return 77
    result = unittest.main(exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
