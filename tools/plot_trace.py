#!/usr/bin/env python3
"""Draws a nuvec trace as a memory timeline.

    plot_trace.py TRACE.jsonl[.gz] -o timeline.png [--x events|time] [--title T]

The picture stacks the live buffers and mapped files by their tag (the
nuvec::Tag open when each was made: weights, kv_cache, activations, ...;
untagged ones as "untagged"), and, for a trace a nuvec device recorded
(which carries the statistics after every event), `cache` (freed blocks kept
for reuse) on top; `wired` and the memory limit are lines. It marks the peak
of active + mapped (for a converted trace, source torch, without
statistics: of the bytes live) and lists what was live there, largest
first. Phases (mark events) are shaded and labelled, refusals are red
crosses. Needs matplotlib (Debian: python3-matplotlib); renders without a
display. `nuvec plot` carries a copy of this script inside itself and runs
it from a temporary file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import zlib
from array import array

GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10
MAX_POINTS = 6000   # per series; more are reduced to per-column maxima


# The bounds nuvec's own reader keeps (include/nuvec/trace.h,
# docs/trace-format.md): a line of at most 1 MiB, at most 2^21 events.
MAX_LINE_BYTES = 1 << 20
MAX_EVENTS = 1 << 21


class TraceError(Exception):
    pass


def open_trace(path: str):
    """The trace as a binary stream, gunzipped if its first bytes say gzip
    (whatever its name)."""
    f = open(path, "rb")
    try:
        magic = f.read(2)
        f.seek(0)
    except OSError:
        f.close()
        raise
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f, mode="rb")
    return f


def trace_lines(path: str):
    """(number, text) of each line, each at most MAX_LINE_BYTES, decoded as
    UTF-8; TraceError naming the line otherwise."""
    if not os.path.isfile(path):
        raise TraceError(f"cannot read {path}: not a regular file")
    try:
        with open_trace(path) as f:
            n = 0
            while True:
                raw = f.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    return
                n += 1
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    raise TraceError(f"{path}:{n}: a line longer than {MAX_LINE_BYTES} bytes, "
                                     "the longest a trace may have (docs/trace-format.md)")
                try:
                    yield n, raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise TraceError(f"{path}:{n}: not UTF-8 text ({e})") from None
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise TraceError(f"cannot read {path}: {e}") from None


def read_header(path: str, lines) -> dict:
    try:
        _, first = next(lines)
    except StopIteration:
        raise TraceError(f"{path}: empty file, expected a nuvec trace header") from None
    try:
        header = json.loads(first)
    except json.JSONDecodeError as e:
        raise TraceError(f"{path}:1: the header is not JSON ({e})") from None
    if not isinstance(header, dict) or "nuvec_trace" not in header:
        raise TraceError(f"{path}:1: not a nuvec trace header (no 'nuvec_trace')")
    if header["nuvec_trace"] != 1:
        raise TraceError(f"{path}:1: trace version {header['nuvec_trace']!r} is not "
                         "supported (this tool reads version 1)")
    return header


NUMBER_FIELDS = ("t_ns", "id", "requested", "size")
STATS_FIELDS = ("active", "cache", "mapped", "wired", "memory_limit")


def checked_event(path: str, n: int, line: str) -> dict:
    """One event line, with the fields the picture reads checked (types and
    ranges); TraceError naming the line otherwise."""
    try:
        e = json.loads(line)
    except json.JSONDecodeError as err:
        raise TraceError(f"{path}:{n}: not JSON ({err})") from None
    if not isinstance(e, dict):
        raise TraceError(f"{path}:{n}: expected a JSON object, found {type(e).__name__}")

    def whole(obj, key, where=""):
        v = obj.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v >= 1 << 64:
            raise TraceError(f"{path}:{n}: {where}field '{key}' must be a non-negative integer "
                             f"below 2^64, not {json.dumps(v)[:40]}")
        return v

    for key in NUMBER_FIELDS:
        whole(e, key)
    if not all(isinstance(e.get(k, ""), str) for k in ("event", "label", "tag")):
        raise TraceError(f"{path}:{n}: fields 'event', 'label' and 'tag' must be strings")
    if "stats" in e:
        st = e["stats"]
        if not isinstance(st, dict):
            raise TraceError(f"{path}:{n}: field 'stats' must be an object")
        for key in STATS_FIELDS:
            whole(st, key, "stats: ")
    return e


def read_trace(path: str) -> tuple[dict, "Events"]:
    """The header and the events, streamed: each event is folded into the
    series as it is read, none is kept (see Events)."""
    lines = trace_lines(path)
    header = read_header(path, lines)
    return header, Events(path, lines)


class Events:
    """The trace's events, read once, one line at a time."""

    def __init__(self, path: str, lines):
        self.path, self.lines, self.count, self.allocations, self.t_end = path, lines, 0, 0, 0

    def __iter__(self):
        for n, line in self.lines:
            if not line.strip():
                continue
            if self.count == MAX_EVENTS:
                raise TraceError(f"{self.path}:{n}: more than {MAX_EVENTS} events, the most "
                                 "a trace may hold (docs/trace-format.md)")
            e = checked_event(self.path, n, line)
            self.count += 1
            self.allocations += e.get("event") == "allocate"
            self.t_end = max(self.t_end, e.get("t_ns", 0))
            yield e


class Series:
    """Per event: x, and the memory figures after it (typed arrays: 8 bytes
    a figure, so a trace's largest series stays in tens of MB)."""

    def __init__(self):
        self.x = array("d")
        self.cols: dict[str, array] = {}

    def add(self, x: float, **values: int) -> None:
        self.x.append(x)
        for k, v in values.items():
            if k not in self.cols:  # a tag first seen now: 0 before
                self.cols[k] = array("Q", bytes(8 * (len(self.x) - 1)))
            # Unsigned 64-bit, as the trace's fields are.
            self.cols[k].append(max(0, min(v, (1 << 64) - 1)))


TAG = "tag:"  # the series of the bytes live under each tag are named tag:<name>


def tag_name(e: dict) -> str:
    return e.get("tag", "") or "untagged"


def live_at(events, index: int) -> list[tuple[int, str, str]]:
    """(size, tag, what) of each buffer and mapping live after event
    `index`, largest first."""
    live = {}
    for i, e in enumerate(events):
        if i > index:
            break
        kind = e.get("event")
        if kind in ("allocate", "map"):
            size = e.get("size", 0) if kind == "map" or "stats" in e else e.get("requested", e.get("size", 0))
            what = f"mapped {os.path.basename(e.get('label', ''))}" if kind == "map" else "buffer"
            live[(kind == "map", e.get("id"))] = (size, tag_name(e), what)
        elif kind in ("free", "unmap"):
            live.pop((kind == "unmap", e.get("id")), None)
    return sorted(live.values(), key=lambda b: -b[0])


def build_series(header: dict, events, x_mode: str):
    """Returns (series, marks [(x, label)], refusals [(x, y, requested)], unit of x).
    Events are read once: whether the trace carries statistics is its
    source's (a nuvec device records them on every event), and the time
    axis takes its unit from the first event's scale when it is not known."""
    has_stats = header.get("source") == "nuvec"
    scale, xunit = None, "events"
    if x_mode == "time":
        scale, xunit = 1e3, "µs"  # rescaled below, once the last time is known

    def xof(e, i):
        return e.get("t_ns", 0) / scale if scale else i

    s = Series()
    marks, refusals = [], []
    live, live_sizes = 0, {}
    tags, tagged = {}, {}  # bytes live per tag; (mapping?, id) -> (size, tag)
    last = dict(active=0, cache=0, mapped=0, wired=0, limit=0)
    for i, e in enumerate(events):
        kind = e.get("event")
        x = xof(e, i)
        st = e.get("stats")
        if st:
            has_stats = True
            last = dict(active=st.get("active", 0), cache=st.get("cache", 0),
                        mapped=st.get("mapped", 0), wired=st.get("wired", 0),
                        limit=st.get("memory_limit", 0))
        elif not has_stats:
            if kind == "allocate":
                size = e.get("requested", e.get("size", 0))
                live += size
                live_sizes[e.get("id")] = size
            elif kind == "free":
                live -= live_sizes.pop(e.get("id"), e.get("size", 0))
            elif kind == "map":
                last["mapped"] += e.get("size", 0)
            elif kind == "unmap":
                last["mapped"] -= e.get("size", 0)
            elif kind == "memory_limit":
                last["limit"] = e.get("requested", 0)
            last["active"] = live
        if kind in ("allocate", "map"):
            size = e.get("size", 0) if has_stats or kind == "map" else e.get("requested", e.get("size", 0))
            tag = tag_name(e)
            tagged[(kind == "map", e.get("id"))] = (size, tag)
            tags[tag] = tags.get(tag, 0) + size
        elif kind in ("free", "unmap"):
            size, tag = tagged.pop((kind == "unmap", e.get("id")), (0, None))
            if tag is not None:
                tags[tag] -= size
        if kind == "mark":
            marks.append((x, e.get("label", "")))
        elif kind == "refuse":
            refusals.append((x, last["active"] + last["mapped"] + last["cache"],
                             e.get("requested", 0)))
        s.add(x, **last, **{TAG + t: v for t, v in tags.items()})
    if x_mode == "time" and s.x:
        t_end = max(s.x) * 1e3  # ns
        factor, xunit = ((1e-6, "s") if t_end >= 10e9 else (1e-3, "ms") if t_end >= 10e6
                         else (1.0, "µs"))
        if factor != 1.0:
            s.x = array("d", (v * factor for v in s.x))
            marks = [(mx * factor, label) for mx, label in marks]
            refusals = [(rx * factor, ry, req) for rx, ry, req in refusals]
    return s, marks, refusals, xunit, has_stats


def reduce_points(s: Series, key_total, n_max=MAX_POINTS) -> Series:
    """Keeps, per x column, the event where the stacked total is highest."""
    n = len(s.x)
    if n <= n_max:
        return s
    x0, x1 = s.x[0], s.x[-1]
    width = (x1 - x0) / (n_max // 2) or 1
    out = Series()
    best, col = None, None
    for i in range(n):
        c = int((s.x[i] - x0) / width)
        if c != col:
            if best is not None:
                out.add(s.x[best], **{k: v[best] for k, v in s.cols.items()})
            # Keep each column's first point too, so drops stay visible.
            out.add(s.x[i], **{k: v[i] for k, v in s.cols.items()})
            best, col = None, c
        if best is None or key_total(i) > key_total(best):
            best = i
    if best is not None:
        out.add(s.x[best], **{k: v[best] for k, v in s.cols.items()})
    out.add(s.x[-1], **{k: v[-1] for k, v in s.cols.items()})
    return out


def fmt_bytes(n: float) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#1f5f8b", "#8cd17d", "#d37295", "#499894", "#86bcb6"]


def plot(header: dict, events: list[dict], out: str, x_mode: str = "events",
         title: str | None = None, name: str = "trace", live_at_peak=None) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    full, marks, refusals, xunit, has_stats = build_series(header, events, x_mode)
    if not full.x:
        raise TraceError("the trace has no events to draw")
    cols = full.cols
    total = [a + c + m for a, c, m in zip(cols["active"], cols["cache"], cols["mapped"])]
    peak_i = max(range(len(total)), key=lambda i: cols["active"][i] + cols["mapped"][i])
    peak_val = cols["active"][peak_i] + cols["mapped"][peak_i]
    s = reduce_points(full, lambda i: total[i])

    top = max(max(total), max(cols["wired"]), 1)
    unit, div = ("GiB", GiB) if top >= GiB else ("MiB", MiB) if top >= MiB else ("KiB", KiB)

    def scaled(v):
        return [b / div for b in v]

    x_lo, x_hi = full.x[0], full.x[-1]
    if xunit == "events" or x_hi <= x_lo:
        # Event i's state holds over [i, i + 1): give the last one its width.
        x_hi += 1
    s.add(x_hi, **{k: v[-1] for k, v in s.cols.items()})

    fig, ax = plt.subplots(figsize=(12, 5.6), dpi=110)
    x = s.x
    a, c, m = s.cols["active"], s.cols["cache"], s.cols["mapped"]
    am = [p + q for p, q in zip(a, m)]
    handles = []
    # The tags, largest at the peak at the bottom; what the device counted
    # beyond them (buffers made before the trace's first event) above.
    tag_cols = sorted((k for k in s.cols if k.startswith(TAG)),
                      key=lambda k: (-full.cols[k][peak_i], k))
    floor = [0] * len(x)
    for i, k in enumerate(tag_cols):
        top_k = [f + v for f, v in zip(floor, s.cols[k])]
        color = PALETTE[i % len(PALETTE)]
        ax.fill_between(x, scaled(floor), scaled(top_k), step="post", color=color, lw=0)
        label = k[len(TAG):]
        if label == "untagged" and len(tag_cols) == 1:
            label = ("untagged: live buffers and mapped files" if has_stats
                     else "live: bytes the program holds (allocated, not yet freed)")
        handles.append(Patch(color=color, label=f"{label} ({fmt_bytes(full.cols[k][peak_i])} at the peak)"))
        floor = top_k
    if has_stats and any(v > f for v, f in zip(am, floor)):
        rest = [max(v, f) for v, f in zip(am, floor)]
        ax.fill_between(x, scaled(floor), scaled(rest), step="post", color="#bbbbbb", lw=0)
        handles.append(Patch(color="#bbbbbb", label="made before the trace's first event"))
        floor = rest
    if any(c):
        amc = [f + q for f, q in zip(floor, c)]
        ax.fill_between(x, scaled(floor), scaled(amc), step="post", color="#e3e3e3", lw=0)
        handles.append(Patch(color="#e3e3e3", label="cache: freed blocks kept for reuse"))
    if any(s.cols["wired"]):
        (h,) = ax.step(x, scaled(s.cols["wired"]), where="post", color="#8e44ad", lw=1.4,
                       ls="--", label="wired: locked in RAM")
        handles.append(h)

    limits = [v for v in s.cols["limit"] if v]
    limit_note = None
    if limits:
        if max(limits) <= 3 * top:
            top = max(top, max(limits))
            (h,) = ax.step(x, [v / div if v else float("nan") for v in s.cols["limit"]],
                           where="post", color="#c0392b", lw=1.6,
                           label=f"memory limit ({fmt_bytes(max(limits))})")
            handles.append(h)
        else:
            limit_note = f"memory limit {fmt_bytes(max(limits))}: off the scale"

    # The one peak metric.
    px = full.x[peak_i]
    peak_label = "peak active + mapped" if has_stats and any(cols["mapped"]) else "peak"
    ax.axhline(peak_val / div, color="black", lw=0.8, ls=(0, (2, 3)), alpha=0.6, zorder=4)
    ax.plot([px], [peak_val / div], marker="v", color="black", ms=7, zorder=5)
    ax.annotate(f"{peak_label} {fmt_bytes(peak_val)}", (px, peak_val / div),
                textcoords="offset points", xytext=(6, 6), fontsize=9, fontweight="bold")
    if live_at_peak:
        lines = ["live at the peak, largest first:"]
        for size, tag, what in live_at_peak[:6]:
            lines.append(f"{fmt_bytes(size):>10}  {tag}  {what}")
        if len(live_at_peak) > 6:
            lines.append(f"... and {len(live_at_peak) - 6} smaller")
        ax.text(0.995, 0.80, "\n".join(lines), transform=ax.transAxes, ha="right", va="top",
                fontsize=7.5, family="monospace", zorder=7,
                bbox=dict(boxstyle="round,pad=0.4", fc="white", ec="#999999", alpha=0.92))

    if refusals:
        ax.plot([r[0] for r in refusals], [r[1] / div for r in refusals], "x", color="#c0392b",
                ms=10, mew=2.5, zorder=6)
        handles.append(plt.Line2D([], [], marker="x", color="#c0392b", ls="", ms=9, mew=2.5,
                                  label=f"refused allocation ({len(refusals)})"))
        right = full.x[0] + 0.7 * (full.x[-1] - full.x[0])
        for rx, ry, req in refusals[:5]:
            ax.annotate(f"refused {fmt_bytes(req)}", (rx, ry / div), textcoords="offset points",
                        xytext=(-8, -16) if rx > right else (8, -16),
                        ha="right" if rx > right else "left", fontsize=8.5, color="#c0392b")

    ax.set_ylim(0, top / div * 1.22)
    ax.set_xlim(x_lo, x_hi)

    # Phases: shaded bands from each mark to the next, labelled at the top;
    # a wide phase's label sits in its middle, a narrow one's is turned
    # upright and kept clear of its neighbour's.
    if marks:
        bounds = [mx for mx, _ in marks] + [x_hi]
        ymax = ax.get_ylim()[1]
        span = x_hi - x_lo
        free_from = x_lo
        for k, (mx, label) in enumerate(marks):
            end = bounds[k + 1]
            if k % 2 == 0:
                ax.axvspan(mx, end, color="black", alpha=0.06, lw=0, zorder=0)
            ax.axvline(mx, color="#555555", lw=0.8, ls=":", zorder=1)
            if (end - mx) >= 0.08 * span:
                ax.text((mx + end) / 2, ymax * 0.985, label, va="top", ha="center",
                        fontsize=9.5, color="#333333", clip_on=True)
                free_from = end
            else:
                tx, ha = max(mx + span * 0.002, free_from), "left"
                if tx > x_hi - span * 0.015:  # at the right edge: left of its line
                    tx, ha = mx - span * 0.002, "right"
                ax.text(tx, ymax * 0.985, label, rotation=90, va="top", ha=ha,
                        fontsize=8.5, color="#333333", clip_on=True)
                free_from = tx + span * 0.018

    ax.set_xlabel({"s": "time (s)", "ms": "time (ms)", "µs": "time (µs)"}.get(
        xunit, "allocator events, in order (allocations, frees, ...)"))
    ax.set_ylabel(f"memory ({unit})")
    src = header.get("source", "?")
    what = header.get("device", "")
    if title is None:
        title = f"{name}: where the memory went"
    ax.set_title(title, fontsize=13, loc="left")
    n_alloc = events.allocations
    t_ns = events.t_end
    took = (f"{t_ns / 1e9:.3g} s" if t_ns >= 1e8 else f"{t_ns / 1e6:.3g} ms" if t_ns >= 1e5
            else f"{t_ns / 1e3:.3g} µs")
    sub = f"{what} ({'recorded by nuvec' if src == 'nuvec' else 'converted from ' + src})" \
          f" · {events.count} events, {n_alloc} allocations in {took}"
    if limit_note:
        sub += " · " + limit_note
    if header.get("dropped"):
        sub += f" · {header['dropped']} oldest events lost"
    fig.text(0.01, 0.005, sub, fontsize=8.5, color="#555555", ha="left", va="bottom")
    ax.grid(axis="y", color="#dddddd", lw=0.7)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.13),
              ncol=min(len(handles), 3), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    try:
        fig.savefig(out)
    except (OSError, ValueError) as e:
        raise TraceError(f"cannot write the picture {out}: {e}") from None
    finally:
        plt.close(fig)
    return {"events": events.count, "peak": peak_val, "peak_index": peak_i, "marks": len(marks),
            "refusals": len(refusals)}


def check_writable(out: str) -> None:
    """TraceError now, before the trace is read, if the picture cannot be
    written there (a missing directory, no permission, a directory)."""
    if os.path.isdir(out):
        raise TraceError(f"cannot write the picture {out}: it is a directory")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise TraceError(f"cannot write the picture {out}: no directory {parent}")
    if not os.access(parent, os.W_OK) or (os.path.exists(out) and not os.access(out, os.W_OK)):
        raise TraceError(f"cannot write the picture {out}: permission denied")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Draw a nuvec trace as a memory timeline (PNG).")
    p.add_argument("trace", help="a nuvec trace: .jsonl or .jsonl.gz")
    p.add_argument("-o", "--output", required=True, help="the picture to write (.png)")
    p.add_argument("--x", choices=("events", "time"), default="events",
                   help="horizontal axis: event number (default: every allocation and free "
                        "gets the same width, so bursts stay visible) or time")
    p.add_argument("--title", default=None)
    args = p.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        # Debian's python3-matplotlib serves only Debian's python3; from
        # another interpreter (pyenv, a venv) try that one before giving up.
        system = "/usr/bin/python3"
        if (os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system)
                and not os.environ.get("NUVEC_PLOT_REEXEC")):
            os.environ["NUVEC_PLOT_REEXEC"] = "1"
            os.execv(system, [system, os.path.abspath(__file__)]
                     + (argv if argv is not None else sys.argv[1:]))
        print("plot_trace: matplotlib is missing (Debian: apt-get install python3-matplotlib; "
              "scripts/install-deps.sh installs it)", file=sys.stderr)
        return 2
    try:
        check_writable(args.output)
        header, events = read_trace(args.trace)
        name = os.path.basename(args.trace).split(".")[0]
        # Two passes over the file, so no event is held: the series and the
        # peak, then what was live at the peak.
        full, *_ = build_series(header, read_trace(args.trace)[1], args.x)
        if not full.x:
            raise TraceError("the trace has no events to draw")
        cols = full.cols
        peak_i = max(range(len(full.x)), key=lambda i: cols["active"][i] + cols["mapped"][i])
        at_peak = live_at(read_trace(args.trace)[1], peak_i)
        info = plot(header, events, args.output, args.x, args.title, name, at_peak)
    except TraceError as e:
        print(f"plot_trace: {e}", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"plot_trace: {args.trace}: out of memory drawing it", file=sys.stderr)
        return 1
    except Exception as e:  # never a traceback: say what failed, exit non-zero
        print(f"plot_trace: {args.trace}: cannot draw it: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"plot_trace: wrote {args.output} ({info['events']} events, peak "
          f"{fmt_bytes(info['peak'])}, {info['marks']} phases, {info['refusals']} refusals)")
    print("live at the peak, largest first:")
    for size, tag, what in at_peak[:10]:
        print(f"  {fmt_bytes(size):>10}  {tag:<14} {what}")
    if len(at_peak) > 10:
        print(f"  ... and {len(at_peak) - 10} smaller")
    return 0



if __name__ == "__main__":
    sys.exit(main())
