#include "memory/trace_recorder.h"

#include <algorithm>
#include <atomic>

namespace nuvec::detail {

std::uint32_t trace_thread_id() {
  static std::atomic<std::uint32_t> next{1};
  thread_local const std::uint32_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

TraceRecorder::TraceRecorder(std::size_t capacity, TraceHeader header, const Device* tagged)
    : capacity_(std::max<std::size_t>(capacity, 1)),
      header_(std::move(header)),
      tagged_(tagged),
      start_(std::chrono::steady_clock::now()) {}

void TraceRecorder::record(TraceEventKind kind, std::uint64_t id, std::uint64_t requested, std::uint64_t size,
                           bool hit, std::string_view label, Stream stream, const MemoryStats& stats) {
  if (next_ == chunks_.size() * kChunkEvents) {  // the first lap reaches a slot not yet made
    chunks_.push_back(std::make_unique<TraceEvent[]>(std::min(kChunkEvents, capacity_ - next_)));
  }
  TraceEvent& e = slot(next_);
  e.seq = recorded_++;
  e.t_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count());
  e.thread = trace_thread_id();
  e.stream = static_cast<std::int64_t>(stream);
  e.kind = kind;
  e.id = id;
  e.requested = requested;
  e.size = size;
  e.hit = hit;
  e.label.assign(label);
  if (tagged_ != nullptr) {
    e.tag.assign(Tag::current(*tagged_));
  } else {
    e.tag.clear();
  }
  e.stats = stats;
  next_ = next_ + 1 == capacity_ ? 0 : next_ + 1;
}

Trace TraceRecorder::snapshot() const {
  Trace trace;
  trace.header = header_;
  const std::size_t held = static_cast<std::size_t>(std::min<std::uint64_t>(recorded_, capacity_));
  trace.header.dropped = recorded_ - held;
  trace.events.reserve(held);
  const std::size_t first = recorded_ > capacity_ ? next_ : 0;
  for (std::size_t i = 0; i < held; ++i) trace.events.push_back(slot((first + i) % capacity_));
  return trace;
}

}  // namespace nuvec::detail
