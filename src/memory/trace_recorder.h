// TraceRecorder: the event trace of one device, in a bounded ring. The
// Allocator records under its lock, so every event carries the statistics
// right after it. Slots are allocated once, when the trace starts: recording
// an event allocates nothing (a label, where one is given, may).
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>
#include <vector>

#include "memory/backend.h"
#include "nuvec/trace.h"

namespace nuvec::detail {

class TraceRecorder {
 public:
  TraceRecorder(std::size_t capacity, TraceHeader header);

  // `stream`: where an allocated or freed buffer is used (a cudaStream_t's
  // bits; 0 on the CPU and for other events).
  void record(TraceEventKind kind, std::uint64_t id, std::uint64_t requested, std::uint64_t size, bool hit,
              std::string_view label, Stream stream, const MemoryStats& stats);

  // The events still in the ring, oldest first, and how many were dropped.
  Trace snapshot() const;

 private:
  std::vector<TraceEvent> ring_;
  std::size_t next_ = 0;       // slot of the next event
  std::uint64_t recorded_ = 0;  // events ever recorded (seq of the next one)
  TraceHeader header_;
  std::chrono::steady_clock::time_point start_;
};

// A small number for the calling thread: 1, 2, ... in order of first use.
std::uint32_t trace_thread_id();

}  // namespace nuvec::detail
