// The first pass of a replay (replay_plan.h): ids to slots, and the
// sequence errors a replay would otherwise meet halfway.
#include "trace/replay_plan.h"

#include <sys/types.h>

#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "nuvec/error.h"

namespace nuvec::detail {

namespace {

using Kind = TraceEventKind;

[[noreturn]] void sequence_error(const ReplayOptions& options, const TraceEvent& e, std::string_view reason) {
  throw FormatError(
      fmt::format("{}: event seq {} ({}): {}", trace_name(options), e.seq, trace_event_name(e.kind), reason),
      options.trace_path, 0);
}

class SlotTable {
 public:
  SlotTable(const char* object, const char* made, const char* gone) : object_(object), made_(made), gone_(gone) {}

  std::size_t open(const TraceEvent& e, const ReplayOptions& options) {
    const auto [it, fresh] = live_.try_emplace(e.id, Live{0, e.seq});
    if (!fresh) {
      sequence_error(
          options, e,
          fmt::format("{} of {} id {}, which is live (since seq {})", made_, object_, e.id, it->second.since));
    }
    if (free_.empty()) {
      it->second.slot = count_++;
    } else {
      it->second.slot = free_.back();
      free_.pop_back();
    }
    return it->second.slot;
  }

  std::size_t close(const Trace& trace, const TraceEvent& e, const ReplayOptions& options) {
    const auto it = live_.find(e.id);
    if (it == live_.end()) {
      std::string reason = fmt::format("{} of {} id {}, which is not live", gone_, object_, e.id);
      if (trace.header.dropped > 0) {
        reason += fmt::format(
            " (the trace dropped {} events when its ring was full, its {} among them "
            "perhaps: record with a larger ring)",
            trace.header.dropped, made_);
      }
      sequence_error(options, e, reason);
    }
    const std::size_t slot = it->second.slot;
    live_.erase(it);
    free_.push_back(slot);
    return slot;
  }

  std::size_t count() const { return count_; }

 private:
  struct Live {
    std::size_t slot;
    std::uint64_t since;
  };
  const char* object_;
  const char* made_;
  const char* gone_;
  std::unordered_map<std::uint64_t, Live> live_;
  std::vector<std::size_t> free_;
  std::size_t count_ = 0;
};

}  // namespace

ReplayPlan make_replay_plan(const Trace& trace, const ReplayOptions& options) {
  ReplayPlan plan;
  plan.slot.assign(trace.events.size(), kNoSlot);
  SlotTable buffers("buffer", "allocate", "free");
  SlotTable mappings("mapping", "map", "unmap");
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    switch (e.kind) {
      case Kind::allocate:
        plan.slot[i] = buffers.open(e, options);
        break;
      case Kind::free:
        plan.slot[i] = buffers.close(trace, e, options);
        break;
      case Kind::map:
        // A replay maps a scratch file of the event's size: refuse here,
        // naming the event, a size no file can have (the largest off_t).
        if (e.size > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) {
          sequence_error(options, e,
                         fmt::format("a mapping of {} bytes: no file can be that large (at most {} bytes), "
                                     "so this trace was not recorded from a real mapping",
                                     e.size, std::numeric_limits<off_t>::max()));
        }
        plan.slot[i] = mappings.open(e, options);
        break;
      case Kind::unmap:
        plan.slot[i] = mappings.close(trace, e, options);
        break;
      default:
        break;
    }
  }
  plan.buffers = buffers.count();
  plan.mappings = mappings.count();
  return plan;
}

}  // namespace nuvec::detail
