// TraceRecorder: the event trace of one device, in a bounded ring. The
// Allocator records under its lock, so every event carries the statistics
// right after it. The ring's slots come in chunks of kChunkEvents as events
// arrive, so a large ring (NUVEC_TRACE_EVENTS) costs memory only once it
// fills: recording allocates nothing except when it starts a new chunk (and
// a label or tag longer than a string holds inline may). Each event carries
// the tag open on the recording thread for the device (nuvec/trace_tag.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "memory/backend.h"
#include "nuvec/trace.h"
#include "nuvec/trace_tag.h"

namespace nuvec::detail {

class TraceRecorder {
 public:
  // `tagged`: the device whose tags (nuvec::Tag) events carry.
  TraceRecorder(std::size_t capacity, TraceHeader header, const Device* tagged = nullptr);

  // `stream`: where an allocated or freed buffer is used (a cudaStream_t's
  // bits; 0 on the CPU and for other events).
  void record(TraceEventKind kind, std::uint64_t id, std::uint64_t requested, std::uint64_t size, bool hit,
              std::string_view label, Stream stream, const MemoryStats& stats);

  // The events still in the ring, oldest first, and how many were dropped.
  Trace snapshot() const;

 private:
  static constexpr std::size_t kChunkEvents = 4096;
  TraceEvent& slot(std::size_t i) { return chunks_[i / kChunkEvents][i % kChunkEvents]; }
  const TraceEvent& slot(std::size_t i) const { return chunks_[i / kChunkEvents][i % kChunkEvents]; }

  std::size_t capacity_;
  std::vector<std::unique_ptr<TraceEvent[]>> chunks_;  // grown until they hold capacity_ slots
  std::size_t next_ = 0;       // slot of the next event
  std::uint64_t recorded_ = 0;  // events ever recorded (seq of the next one)
  TraceHeader header_;
  const Device* tagged_;
  std::chrono::steady_clock::time_point start_;
};

// A small number for the calling thread: 1, 2, ... in order of first use.
std::uint32_t trace_thread_id();

}  // namespace nuvec::detail
