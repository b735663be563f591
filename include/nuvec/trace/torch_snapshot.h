// A nuvec trace as a PyTorch memory snapshot: the pickle that
// torch.cuda.memory._dump_snapshot() writes, so that PyTorch's viewers
// (python -m torch.cuda._memory_viz, pytorch.org/memory_viz) open it, or the
// list of segments alone that PyTorch 1.13's viewer reads.
// docs/trace-format.md ("Export to PyTorch's snapshot") says what becomes what.
#pragma once

#include <cstdint>
#include <string>

#include "nuvec/trace.h"

namespace nuvec {

struct TorchSnapshotSummary {
  std::uint64_t entries = 0;   // device_traces entries written
  std::uint64_t segments = 0;  // segments of the end state
  std::uint64_t active = 0;    // bytes of active_allocated blocks at the end (buffers and mapped files)
  std::uint64_t inactive = 0;  // bytes of inactive (cached) blocks at the end
  // A converted trace (source not "nuvec"): its ids are not addresses, so each
  // buffer is a segment of its own at an address the export gives it, and
  // PyTorch's cache is not in the snapshot.
  bool synthetic_addresses = false;
};

// No one pickle of plain data is read by both PyTorch 1.13's and 2.x's
// `python -m torch.cuda._memory_viz`: 1.13's iterates the loaded object as a
// list of segments (a dict gives it its keys, strings: "string indices must be
// integers"), and 2.x's trace, trace_plot and segment_plot need the dict's
// device_traces (2.x wraps a list in a dict without them).
enum class TorchSnapshotShape {
  snapshot,  // the dict of _dump_snapshot() (PyTorch 2.x): segments, device_traces, external_annotations
  segments,  // the list of torch.cuda.memory_snapshot(): the end state alone, what 1.13 reads
};

// The snapshot pickle of `trace`, appended to `out`.
TorchSnapshotSummary torch_snapshot(const Trace& trace, std::string& out,
                                    TorchSnapshotShape shape = TorchSnapshotShape::snapshot);

}  // namespace nuvec
