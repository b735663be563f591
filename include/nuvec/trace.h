// The event trace: what a device did, event by event, with the statistics
// after each. Off by default; on, it records into a bounded ring. The file
// format (JSON Lines) is docs/trace-format.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
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
  std::string tag;  // the nuvec::Tag open where the event happened; empty for none
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

// The bounds a trace file is read within (docs/trace-format.md): a line of
// at most 1 MiB (an event line is a few hundred bytes), and, for read_trace,
// at most 2^21 events, the largest ring a device records
// (NUVEC_TRACE_EVENTS); past either, a FormatError naming the line.
inline constexpr std::size_t kMaxTraceLineBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxTraceEvents = std::size_t{1} << 21;

// Reads a trace one event at a time, plain or gzip-compressed (told by its
// first bytes, not its name), holding one line at a time. Opening reads the
// header. FormatError naming the file and the line (as the byte offset of
// the line, counted in decompressed bytes, with "line N" in the message) for
// anything malformed; IoError for a path that is not a readable regular
// file (a FIFO is refused at once, not waited on).
class TraceReader {
 public:
  explicit TraceReader(const std::filesystem::path& path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const TraceHeader& header() const { return header_; }
  // The next event; empty at the end of the file.
  std::optional<TraceEvent> next();
  // The number of the line last read (the header is line 1).
  std::uint64_t line() const;

 private:
  struct State;
  bool read_line(std::uint64_t& offset);

  std::filesystem::path path_;
  std::unique_ptr<State> state_;
  TraceHeader header_;
};

// Reads a whole trace (a TraceReader's events); FormatError naming the line
// of the first event past `max_events`.
Trace read_trace(const std::filesystem::path& path, std::size_t max_events = kMaxTraceEvents);

}  // namespace nuvec
