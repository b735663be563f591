// A nuvec trace as a PyTorch memory snapshot: the pickle that
// torch.cuda.memory._dump_snapshot() writes, so that PyTorch's viewers
// (python -m torch.cuda._memory_viz, pytorch.org/memory_viz) open it.
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
};

// The snapshot pickle of `trace`, appended to `out`.
TorchSnapshotSummary torch_snapshot(const Trace& trace, std::string& out);

}  // namespace nuvec
