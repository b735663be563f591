// The same allocate/free sequence on glibc malloc/free, for a side-by-side
// ratio: what glibc holds (mallinfo2) per byte live, and its time per operation.
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "nuvec/trace/replay.h"
#include "trace/replay_plan.h"

namespace nuvec {

namespace {

using detail::Clock;
using detail::elapsed_ns;
using Kind = TraceEventKind;

// What glibc holds for the process: its arenas and its mmapped chunks.
std::size_t glibc_held() {
  const struct mallinfo2 info = ::mallinfo2();
  return info.arena + info.hblkhd;
}

}  // namespace

MallocReport replay_malloc(const Trace& trace, const ReplayOptions& options) {
  const detail::ReplayPlan plan = detail::make_replay_plan(trace, options);
  std::vector<void*> blocks(plan.buffers, nullptr);
  std::vector<std::size_t> requested(plan.buffers, 0);
  std::vector<char> refused(plan.buffers, 0);

  MallocReport report;
  const std::size_t baseline = glibc_held();
  std::size_t live = 0;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    const std::size_t slot = plan.slot[i];
    if (e.kind == Kind::allocate) {
      ++report.allocations;
      const Clock::time_point t0 = Clock::now();
      void* p = std::malloc(e.requested);
      const Clock::time_point t1 = Clock::now();
      if (p == nullptr && e.requested != 0) {
        ++report.refusals;
        refused[slot] = 1;
        continue;
      }
      report.times.allocate_ns += elapsed_ns(t0, t1);
      ++report.times.allocates;
      blocks[slot] = p;
      requested[slot] = e.requested;
      live += e.requested;
      report.peak_live = std::max(report.peak_live, live);
    } else if (e.kind == Kind::free) {
      ++report.frees;
      if (refused[slot]) {
        refused[slot] = 0;
        continue;
      }
      const Clock::time_point t0 = Clock::now();
      std::free(blocks[slot]);
      const Clock::time_point t1 = Clock::now();
      report.times.free_ns += elapsed_ns(t0, t1);
      ++report.times.frees;
      blocks[slot] = nullptr;
      live -= requested[slot];
    } else {
      continue;
    }
    const std::size_t held = glibc_held();
    report.peak_held = std::max(report.peak_held, held > baseline ? held - baseline : 0);
  }
  for (void* p : blocks) std::free(p);
  return report;
}

}  // namespace nuvec
