#!/usr/bin/env python3
"""Converts a PyTorch CUDA memory snapshot into a nuvec trace.

    trace_from_torch.py SNAPSHOT.pickle[.gz] -o TRACE.jsonl[.gz]

SNAPSHOT is what torch.cuda.memory._dump_snapshot() writes after
torch.cuda.memory._record_memory_history(): a pickle of plain dicts and lists.
Reading it needs only the standard library (no torch). The output is a nuvec
trace (docs/trace-format.md, version 1) with "source": "torch" and no stats.

What becomes what, per trace entry of the chosen device:

  alloc                      -> allocate  (requested = size = the bytes asked for)
  free_completed             -> free      (free_requested instead, where the
                                           snapshot holds no free_completed)
  oom                        -> refuse
  segment_*, snapshot        -> nothing: they are PyTorch's own cache, which
                                the replaying allocator replaces
  nuvec_marks (a key the recorder tools/record_torch_traces.py adds), or
  where there are none, external_annotations START stages (record_function
  scopes, e.g. "Optimizer.step#AdamW.step")
                             -> mark, placed in time order

Ids are small integers (1, 2, ...) given in order of allocation, so an address
that PyTorch reuses after its free gets a new id; each allocate also carries
"addr", PyTorch's address, for reading the trace beside the snapshot.
"hit" says whether PyTorch's cache served the allocation (no segment was
mapped or cudaMalloc'ed for it just before). Frees of addresses whose
allocation is not in the trace (blocks already live when recording began, or
entries lost when the ring passed max_entries) are dropped and counted.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import pickle
import sys
from dataclasses import dataclass, field
from typing import IO, Any, Iterable

FORMAT_VERSION = 1

# What a snapshot pickle may name besides plain values. PyTorch writes plain
# dicts, lists, tuples, strings and numbers; refusing every other class keeps
# a hostile pickle from running code. torch.__version__ (a str subclass) is
# read as a plain string, for snapshots that carry it in added metadata.
_ALLOWED_CLASSES = {("collections", "OrderedDict"): None,
                    ("torch.torch_version", "TorchVersion"): str}


class SnapshotError(Exception):
    """The input is not a PyTorch memory snapshot we can convert."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_CLASSES:
            return _ALLOWED_CLASSES[module, name] or super().find_class(module, name)
        raise SnapshotError(
            f"the pickle names {module}.{name}; a memory snapshot holds only "
            "plain dicts and lists, so it is refused")


def _open_read(path: str) -> IO[bytes]:
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def load_snapshot(path: str) -> dict:
    """Reads a snapshot pickle (gzip-compressed if the name ends in .gz)."""
    try:
        with _open_read(path) as f:
            data = _PlainUnpickler(f).load()
    except OSError as e:
        raise SnapshotError(f"cannot read {path}: {e}") from e
    except (pickle.UnpicklingError, EOFError, ValueError) as e:
        raise SnapshotError(f"{path} is not a readable pickle: {e}") from e
    if not isinstance(data, dict) or "device_traces" not in data:
        raise SnapshotError(
            f"{path} holds no 'device_traces': record with "
            "torch.cuda.memory._record_memory_history(max_entries=...) before "
            "torch.cuda.memory._dump_snapshot()")
    return data


@dataclass
class Summary:
    device: int = 0
    entries: int = 0
    events: int = 0
    counts: dict = field(default_factory=dict)   # event kind -> number
    free_action: str = "free_completed"
    peak_live: int = 0
    peak_at_seq: int = 0
    distinct_sizes: int = 0
    distinct_sizes_at_peak: int = 0
    live_at_end: int = 0
    live_bytes_at_end: int = 0
    unmatched_frees: int = 0
    unmatched_free_bytes: int = 0
    reallocated_live: int = 0
    skipped: dict = field(default_factory=dict)  # torch action -> number

    def lines(self) -> list[str]:
        c = self.counts
        out = [
            f"device {self.device}: {self.entries} torch entries -> {self.events} events "
            f"({c.get('allocate', 0)} allocate, {c.get('free', 0)} free, "
            f"{c.get('refuse', 0)} refuse, {c.get('mark', 0)} mark)",
            f"peak live {format_bytes(self.peak_live)} ({self.peak_live} bytes) at seq "
            f"{self.peak_at_seq}; {self.distinct_sizes} distinct sizes, "
            f"{self.distinct_sizes_at_peak} of them live at the peak",
            f"live at end: {self.live_at_end} blocks, {format_bytes(self.live_bytes_at_end)}",
        ]
        if self.free_action != "free_completed":
            out.append("no free_completed entries: frees taken from free_requested")
        if self.skipped:
            out.append("skipped: " + ", ".join(f"{n} {a}" for a, n in sorted(self.skipped.items())))
        return out


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n} B"


def choose_device(snapshot: dict, device: int | None) -> int:
    traces = snapshot["device_traces"]
    if device is not None:
        if not 0 <= device < len(traces):
            raise SnapshotError(f"device {device} is not in the snapshot "
                                f"({len(traces)} device traces)")
        return device
    lengths = [len(t or []) for t in traces]
    if not lengths or max(lengths) == 0:
        raise SnapshotError(
            "the snapshot holds no trace entries: was "
            "torch.cuda.memory._record_memory_history(enabled='all') on while the "
            "program ran?")
    return max(range(len(lengths)), key=lambda i: lengths[i])


def _marks(snapshot: dict, device: int) -> list[tuple[int, str]]:
    """(time_us, name) of each phase start the snapshot carries, in time order.

    The recorder's own marks where there are some; otherwise the START stages
    of PyTorch's external_annotations (record_function scopes, such as
    "Optimizer.step#AdamW.step").
    """
    marks = []
    for m in snapshot.get("nuvec_marks") or []:
        if m.get("device", device) == device:
            marks.append((int(m["time_us"]), str(m["name"])))
    for a in [] if marks else snapshot.get("external_annotations") or []:
        if not isinstance(a, dict) or "time_us" not in a or "name" not in a:
            continue
        if a.get("device", device) != device or str(a.get("stage", "START")).upper() != "START":
            continue
        marks.append((int(a["time_us"]), str(a["name"])))
    marks.sort(key=lambda m: m[0])
    return marks


def convert(snapshot: dict, device: int | None = None, program: str | None = None,
            page_size: int = 4096) -> tuple[dict, list[dict], Summary]:
    """Returns the trace's header, its events and a summary."""
    device = choose_device(snapshot, device)
    entries = snapshot["device_traces"][device] or []
    s = Summary(device=device, entries=len(entries))
    s.free_action = ("free_completed"
                     if any(e.get("action") == "free_completed" for e in entries)
                     else "free_requested")
    marks = _marks(snapshot, device)
    times = [e["time_us"] for e in entries if "time_us" in e]
    t0 = min(times + [m[0] for m in marks]) if (times or marks) else 0

    events: list[dict] = []
    live: dict[int, tuple[int, int]] = {}     # addr -> (id, size)
    live_sizes: dict[int, int] = {}           # size -> live blocks of it
    sizes: set[int] = set()
    pending_segments: list[tuple[int, int]] = []  # mapped since the last alloc
    next_id = 1
    live_bytes = 0
    last_t = 0
    mi = 0

    def emit(kind: str, t_us: int, stream: int, **fields: Any) -> None:
        nonlocal last_t
        # Entries are in the order the allocator applied them; the clock they
        # carry is approximate, so keep t_ns from going backwards.
        last_t = max(last_t, (t_us - t0) * 1000)
        ev = {"seq": len(events), "t_ns": last_t, "thread": 1, "stream": stream,
              "event": kind}
        ev.update(fields)
        events.append(ev)
        s.counts[kind] = s.counts.get(kind, 0) + 1

    def drop_live(addr: int) -> tuple[int, int]:
        nonlocal live_bytes
        bid, size = live.pop(addr)
        live_bytes -= size
        live_sizes[size] -= 1
        if not live_sizes[size]:
            del live_sizes[size]
        return bid, size

    for index, e in enumerate(entries):
        action = e.get("action")
        t_us = int(e.get("time_us", t0 + index))
        while mi < len(marks) and marks[mi][0] <= t_us:
            emit("mark", marks[mi][0], 0, label=marks[mi][1])
            mi += 1
        stream = int(e.get("stream", 0))
        size = int(e.get("size", 0))
        if action == "alloc":
            addr = int(e["addr"])
            if addr in live:
                # Its free is missing (lost from the ring, or still pending on
                # another stream): end the old block before the new one starts.
                s.reallocated_live += 1
                bid, old = drop_live(addr)
                emit("free", t_us, stream, id=bid, size=old)
            hit = not any(a < addr + max(size, 1) and addr < a + n for a, n in pending_segments)
            pending_segments.clear()
            bid, next_id = next_id, next_id + 1
            live[addr] = (bid, size)
            live_bytes += size
            live_sizes[size] = live_sizes.get(size, 0) + 1
            sizes.add(size)
            emit("allocate", t_us, stream, id=bid, requested=size, size=size, hit=hit, addr=addr)
            if live_bytes > s.peak_live:
                s.peak_live, s.peak_at_seq = live_bytes, events[-1]["seq"]
                s.distinct_sizes_at_peak = len(live_sizes)
        elif action == s.free_action:
            addr = int(e["addr"])
            if addr not in live:
                s.unmatched_frees += 1
                s.unmatched_free_bytes += size
                continue
            bid, bsize = drop_live(addr)
            emit("free", t_us, stream, id=bid, size=bsize)
        elif action == "oom":
            free = e.get("device_free")
            label = f"PyTorch out of memory: {size} bytes asked"
            if free is not None:
                label += f", {int(free)} bytes free on the device"
            emit("refuse", t_us, stream, requested=size, label=label)
        else:
            if action in ("segment_alloc", "segment_map"):
                pending_segments.append((int(e.get("addr", 0)), size))
            if action != "free_completed" and action != "free_requested":
                s.skipped[str(action)] = s.skipped.get(str(action), 0) + 1
    for t_us, name in marks[mi:]:
        emit("mark", t_us, 0, label=name)

    s.events = len(events)
    s.distinct_sizes = len(sizes)
    s.live_at_end = len(live)
    s.live_bytes_at_end = live_bytes
    header = {"nuvec_trace": FORMAT_VERSION,
              "device": program or f"pytorch cuda:{device}",
              "page_size": page_size, "source": "torch", "dropped": 0,
              "unmatched_frees": s.unmatched_frees}
    return header, events, s


def write_trace(out: IO[bytes], header: dict, events: Iterable[dict]) -> None:
    text = io.TextIOWrapper(out, encoding="utf-8", newline="\n")
    text.write(json.dumps(header) + "\n")
    for ev in events:
        text.write(json.dumps(ev) + "\n")
    text.flush()
    text.detach()


def write_trace_file(path: str, header: dict, events: Iterable[dict]) -> None:
    """Writes the trace to path, gzip-compressed if the name ends in .gz."""
    with open(path, "wb") as raw:
        if path.endswith(".gz"):
            # mtime=0 and no name inside: the same events give the same bytes.
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                write_trace(gz, header, events)
        else:
            write_trace(raw, header, events)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="Convert a torch.cuda.memory._dump_snapshot() pickle into a nuvec trace "
                    "(docs/trace-format.md).")
    p.add_argument("snapshot", help="the snapshot pickle (.pickle, or .pickle.gz)")
    p.add_argument("-o", "--output", required=True,
                   help="the trace to write: .jsonl, .jsonl.gz (gzip), or - for stdout")
    p.add_argument("--device", type=int, default=None,
                   help="which device's trace (default: the one with the most entries)")
    p.add_argument("--program", default=None,
                   help="the header's 'device' field: the program the trace came from "
                        "(default: 'pytorch cuda:N')")
    p.add_argument("--page-size", type=int, default=4096,
                   help="the header's page_size (default 4096)")
    args = p.parse_args(argv)

    try:
        snapshot = load_snapshot(args.snapshot)
        header, events, summary = convert(snapshot, args.device, args.program, args.page_size)
    except SnapshotError as e:
        print(f"trace_from_torch: {e}", file=sys.stderr)
        return 1

    if args.output == "-":
        write_trace(sys.stdout.buffer, header, events)
        report = sys.stderr
    else:
        write_trace_file(args.output, header, events)
        report = sys.stdout
    for line in summary.lines():
        print(f"trace_from_torch: {line}", file=report)
    if summary.unmatched_frees:
        print(f"trace_from_torch: dropped {summary.unmatched_frees} frees "
              f"({format_bytes(summary.unmatched_free_bytes)}) of blocks allocated before "
              "the trace began", file=sys.stderr)
    if summary.reallocated_live:
        print(f"trace_from_torch: {summary.reallocated_live} allocations reused a live "
              "address (their frees are not in the trace); a free was put before each",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
