// The event trace: what a device did, event by event, with the statistics
// after each. Off by default; on, it records into a bounded ring. The file
// format (JSON Lines) is docs/trace-format.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/memory_stats.h"

namespace nuvec {

enum class TraceEventKind : std::uint8_t {
  allocate, free, release, map, unmap, wire, unwire, refuse,
  memory_limit, cache_limit, wired_limit, reset_peak, clear_cache, mark,
};

// The name used in trace files ("allocate"), and back (empty if unknown).
std::string_view trace_event_name(TraceEventKind kind);
std::optional<TraceEventKind> trace_event_kind(std::string_view name);

struct TraceEvent {
  std::uint64_t seq = 0;
  std::uint64_t t_ns = 0;
  std::uint32_t thread = 0;
  std::int64_t stream = 0;
  TraceEventKind kind = TraceEventKind::mark;
  std::uint64_t id = 0;
  std::uint64_t requested = 0;
  std::uint64_t size = 0;
  bool hit = false;
  std::string label;
  std::optional<MemoryStats> stats;  // present in traces a nuvec device recorded

  friend bool operator==(const TraceEvent&, const TraceEvent&) = default;
};

struct TraceHeader {
  int version = 1;
  std::string device = "cpu";
  std::uint64_t page_size = 4096;
  std::string source = "nuvec";
  std::uint64_t dropped = 0;

  friend bool operator==(const TraceHeader&, const TraceHeader&) = default;
};

struct Trace {
  TraceHeader header;
  std::vector<TraceEvent> events;

  friend bool operator==(const Trace&, const Trace&) = default;
};

// Writes a trace as JSON Lines (docs/trace-format.md).
void write_trace(std::ostream& out, const Trace& trace);
void write_trace(const std::filesystem::path& path, const Trace& trace);

// Reads a trace; FormatError naming the file and the line (as the byte
// offset, with "line N" in the message) for anything malformed.
Trace read_trace(const std::filesystem::path& path);

}  // namespace nuvec
