"""What a nuvec trace says, worked out from its events alone (not from the
export), for checking what PyTorch's viewer prints about the export.

A nuvec trace's ids are addresses; a converted one's (source not "nuvec")
are not, and the export makes each of its buffers a segment of its own with
no cache (docs/trace-format.md, "Export to PyTorch's snapshot").
"""

import gzip
import json


def read_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        header = json.loads(next(f))
        return header, [json.loads(line) for line in f]


class TraceTruth:
    def __init__(self, header, events):
        self.converted = header["source"] != "nuvec"
        live, mapped = {}, {}
        reserved = 0  # bytes taken from the system and not given back: live and cached
        counts = dict.fromkeys(("allocate", "miss", "free", "release", "map", "unmap", "refuse"), 0)
        for e in events:
            kind = e["event"]
            if kind in counts:
                counts[kind] += 1
            if kind == "allocate":
                live[e["id"]] = e
                if not e["hit"] or self.converted:
                    counts["miss"] += 1
                    reserved += e["size"]
            elif kind == "free":
                live.pop(e["id"], None)
                if self.converted:
                    reserved -= e["size"]
            elif kind == "release" and not self.converted:
                reserved -= e["size"]
            elif kind == "map":
                mapped[e["id"]] = e
            elif kind == "unmap":
                mapped.pop(e["id"], None)
        self.counts = counts
        self.live = live
        self.mapped_files = mapped
        self.active = sum(e["size"] for e in live.values())
        self.requested = sum(e["requested"] for e in live.values())
        self.mapped = sum(e["size"] for e in mapped.values())
        self.cached = reserved - self.active
        self.total = reserved + self.mapped
        # The bytes each tag holds at the end: a buffer's as asked for (what
        # _memory_viz counts of a block), a mapping's whole.
        self.by_tag = {}
        for e in list(live.values()) + list(mapped.values()):
            if e.get("tag"):
                amount = e["requested"] if e["event"] == "allocate" else e["size"]
                self.by_tag[e["tag"]] = self.by_tag.get(e["tag"], 0) + amount
        self.stats = events[-1].get("stats") if events else None

    def trace_entries(self):
        """How many device_traces entries the export writes for these events."""
        c = self.counts
        if self.converted:  # each buffer its own segment: alloc and free both bracketed
            return 2 * c["allocate"] + 3 * c["free"] + 2 * c["map"] + 3 * c["unmap"] + c["refuse"]
        return (c["allocate"] + c["miss"] + 2 * c["free"] + c["release"] + 2 * c["map"] + 3 * c["unmap"]
                + c["refuse"])

    def segment_frees(self):
        """segment_free entries: releases (a nuvec trace) or frees (a converted one), and unmaps."""
        c = self.counts
        return (c["free"] if self.converted else c["release"]) + c["unmap"]
