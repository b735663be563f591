// The first pass of a replay: it checks a trace's allocate/free and map/unmap
// sequence and gives every buffer and mapping a slot, reused once it is gone,
// so that a replay loop keeps its objects in vectors sized beforehand and
// allocates nothing from the heap while it times operations (malloc's
// figures would otherwise include the replay's own bookkeeping).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nuvec/trace.h"
#include "nuvec/trace/replay.h"

namespace nuvec::detail {

inline constexpr std::size_t kNoSlot = static_cast<std::size_t>(-1);

struct ReplayPlan {
  std::vector<std::size_t> slot;  // per event: its object's slot; kNoSlot for other kinds
  std::size_t buffers = 0;        // buffer slots needed
  std::size_t mappings = 0;       // mapping slots needed
};

// FormatError naming the event's seq for a free (unmap) of an id that is not
// live, or an allocate (map) of one that is.
ReplayPlan make_replay_plan(const Trace& trace, const ReplayOptions& options);

// Events that follow from the device's policy: a replay does not apply them.
inline bool follows_from_policy(TraceEventKind k) {
  return k == TraceEventKind::release || k == TraceEventKind::wire || k == TraceEventKind::unwire ||
         k == TraceEventKind::refuse;
}

// The trace's name for messages.
inline std::string trace_name(const ReplayOptions& options) {
  return options.trace_path.empty() ? std::string{"trace"} : options.trace_path.string();
}

using Clock = std::chrono::steady_clock;
inline std::uint64_t elapsed_ns(Clock::time_point start, Clock::time_point end) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
}

}  // namespace nuvec::detail
