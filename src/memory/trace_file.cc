// Trace files (docs/trace-format.md): JSON Lines, a header line and then one
// object per event. The writer puts only the fields the format's table gives
// an event's kind; the reader treats the file as hostile input, naming the
// line (and its byte offset) of anything malformed.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <ostream>
#include <string>

#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>
#include <nlohmann/json.hpp>

#include "memory/input_file.h"
#include "nuvec/error.h"
#include "nuvec/trace.h"

namespace nuvec {

namespace {

using Json = nlohmann::ordered_json;
using Kind = TraceEventKind;

constexpr std::string_view kNames[] = {
    "allocate", "free",         "release",     "map",         "unmap",      "wire",        "unwire",
    "refuse",   "memory_limit", "cache_limit", "wired_limit", "reset_peak", "clear_cache", "mark",
};

// Which optional fields an event of `kind` carries (the format's table).
bool has_id(Kind k) {
  return k == Kind::allocate || k == Kind::free || k == Kind::release || k == Kind::map || k == Kind::unmap ||
         k == Kind::wire || k == Kind::unwire;
}
bool has_size(Kind k) { return has_id(k); }
bool is_limit(Kind k) { return k == Kind::memory_limit || k == Kind::cache_limit || k == Kind::wired_limit; }
bool has_requested(Kind k) { return k == Kind::allocate || k == Kind::map || k == Kind::refuse || is_limit(k); }
bool has_hit(Kind k) { return k == Kind::allocate; }
bool has_label(Kind k) { return k == Kind::mark || k == Kind::map || k == Kind::refuse; }

// Labels are paths and user text: bytes that are not UTF-8 become U+FFFD
// rather than failing the whole trace.
std::string dump_line(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json header_json(const TraceHeader& h) {
  return {{"nuvec_trace", h.version},
          {"device", h.device},
          {"page_size", h.page_size},
          {"source", h.source},
          {"dropped", h.dropped}};
}

Json event_json(const TraceEvent& e) {
  Json j = {{"seq", e.seq},
            {"t_ns", e.t_ns},
            {"thread", e.thread},
            {"stream", e.stream},
            {"event", trace_event_name(e.kind)}};
  if (has_id(e.kind)) j["id"] = e.id;
  if (has_requested(e.kind)) j["requested"] = e.requested;
  if (has_size(e.kind)) j["size"] = e.size;
  if (has_hit(e.kind)) j["hit"] = e.hit;
  if (has_label(e.kind)) j["label"] = e.label;
  if (!e.tag.empty()) j["tag"] = e.tag;
  if (e.stats) {
    // All twelve fields, named and ordered by for_each_field (the same list
    // nuvec/memory_stats_json.h uses), so the lines read in field order.
    Json stats = Json::object();
    for_each_field(*e.stats, [&](const char* name, const auto& value) { stats[name] = value; });
    j["stats"] = std::move(stats);
  }
  return j;
}

// One line of the file being read: checked access to its fields, each
// failure a FormatError naming the line.
class Line {
 public:
  Line(const std::filesystem::path& file, std::uint64_t number, std::uint64_t offset, const std::string& text)
      : file_(file), number_(number), offset_(offset) {
    try {
      json_ = Json::parse(text);
    } catch (const Json::exception& e) {  // parse_error, and out_of_range for a number such as 1e9999
      fail(fmt::format("not JSON ({})", e.what()));
    }
    if (!json_.is_object()) fail(fmt::format("expected a JSON object, found {}", json_.type_name()));
  }

  bool has(const char* key) const { return json_.contains(key); }
  const Json& json() const { return json_; }

  [[noreturn]] void fail(std::string_view reason) const {
    io::format_error(file_, offset_, fmt::format("line {}: {}", number_, reason));
  }

  const Json& field(const Json& object, const char* key, std::string_view where) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(fmt::format("{}missing field '{}'", where, key));
    return *it;
  }

  // A non-negative integer no larger than `max`.
  std::uint64_t unsigned_field(const Json& object, const char* key, std::uint64_t max,
                               std::string_view where = {}) const {
    const Json& v = field(object, key, where);
    if (v.is_number_integer() && !v.is_number_unsigned()) {  // the parser keeps non-negative integers unsigned
      fail(fmt::format("{}field '{}' is negative ({})", where, key, v.dump()));
    }
    if (!v.is_number_unsigned()) {
      fail(fmt::format("{}field '{}' must be a non-negative integer, not {}", where, key, v.dump()));
    }
    const std::uint64_t value = v.get<std::uint64_t>();
    if (value > max) fail(fmt::format("{}field '{}' is {}, more than its limit of {}", where, key, value, max));
    return value;
  }
  std::uint64_t unsigned_field(const char* key, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
    return unsigned_field(json_, key, max);
  }

  std::string string_field(const char* key) const {
    const Json& v = field(json_, key, {});
    if (!v.is_string()) fail(fmt::format("field '{}' must be a string, not {}", key, v.type_name()));
    return v.get<std::string>();
  }

  bool bool_field(const char* key) const {
    const Json& v = field(json_, key, {});
    if (!v.is_boolean()) fail(fmt::format("field '{}' must be true or false, not {}", key, v.dump()));
    return v.get<bool>();
  }

  MemoryStats stats_field() const {
    const Json& v = field(json_, "stats", {});
    if (!v.is_object()) fail(fmt::format("field 'stats' must be an object, not {}", v.type_name()));
    MemoryStats s;
    for_each_field(s, [&](const char* name, auto& value) {
      using Field = std::remove_reference_t<decltype(value)>;
      value = static_cast<Field>(unsigned_field(v, name, std::numeric_limits<Field>::max(), "stats: "));
    });
    return s;
  }

 private:
  const std::filesystem::path& file_;
  std::uint64_t number_;
  std::uint64_t offset_;
  Json json_;
};

TraceHeader read_header(const Line& line) {
  if (!line.has("nuvec_trace")) {
    line.fail(
        "missing header: the first line must be the header, {\"nuvec_trace\": 1, ...} "
        "(docs/trace-format.md)");
  }
  TraceHeader h;
  const std::uint64_t version = line.unsigned_field("nuvec_trace");
  if (version != 1) line.fail(fmt::format("unknown trace version {} (this reader knows version 1)", version));
  h.version = static_cast<int>(version);
  h.device = line.string_field("device");
  h.page_size = line.unsigned_field("page_size");
  h.source = line.string_field("source");
  h.dropped = line.unsigned_field("dropped");
  return h;
}

TraceEvent read_event(const Line& line, bool stats_required) {
  TraceEvent e;
  e.seq = line.unsigned_field("seq");
  e.t_ns = line.unsigned_field("t_ns");
  e.thread = static_cast<std::uint32_t>(line.unsigned_field("thread", std::numeric_limits<std::uint32_t>::max()));
  e.stream = static_cast<std::int64_t>(line.unsigned_field("stream", std::numeric_limits<std::int64_t>::max()));
  const std::string name = line.string_field("event");
  const std::optional<Kind> kind = trace_event_kind(name);
  if (!kind) line.fail(fmt::format("unknown event kind '{}'", name));
  e.kind = *kind;
  if (has_id(e.kind)) e.id = line.unsigned_field("id");
  if (has_requested(e.kind)) e.requested = line.unsigned_field("requested");
  if (has_size(e.kind)) e.size = line.unsigned_field("size");
  if (has_hit(e.kind)) e.hit = line.bool_field("hit");
  if (has_label(e.kind)) e.label = line.string_field("label");
  if (line.has("tag")) e.tag = line.string_field("tag");
  if (stats_required || line.has("stats")) e.stats = line.stats_field();
  return e;
}

// Lines of a file read in large chunks, with the byte offset of each.
// Lines of a trace file, plain or gzip-compressed (zlib reads both; for a
// compressed file, offsets count decompressed bytes).
class LineReader {
 public:
  explicit LineReader(const io::InputFile& file) : file_(file) {
    std::byte magic[2] = {};
    if (file.size() >= 2) file.read_exact(0, magic, "gzip magic");
    if (magic[0] == std::byte{0x1f} && magic[1] == std::byte{0x8b}) {
      const int fd = ::dup(file.fd());
      if (fd < 0 || (gz_ = gzdopen(fd, "rb")) == nullptr) {
        if (fd >= 0) ::close(fd);
        throw IoError(fmt::format("cannot read the gzip-compressed trace {}", file.path().string()), file.path(), errno);
      }
    }
  }
  ~LineReader() {
    if (gz_ != nullptr) gzclose(gz_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its '\n'; false at the end of the file. A line
  // longer than kMaxTraceLineBytes is a FormatError naming it: a hostile
  // (or decompressed) file never sizes a string.
  bool next(std::string& line, std::uint64_t& offset) {
    line.clear();
    offset = line_start_;
    bool any = false;
    while (true) {
      if (pos_ == chunk_.size() && !refill()) {
        if (any) line_start_ = read_;
        if (any) ++lines_;
        return any;
      }
      any = true;
      const std::size_t newline = chunk_.find('\n', pos_);
      const std::size_t end = newline == std::string::npos ? chunk_.size() : newline;
      if (line.size() + (end - pos_) > kMaxTraceLineBytes) {
        io::format_error(file_.path(), offset,
                         fmt::format("line {}: longer than {} bytes, the longest line a trace may have "
                                     "(docs/trace-format.md); is this a trace?",
                                     lines_ + 1, kMaxTraceLineBytes));
      }
      line.append(chunk_, pos_, end - pos_);
      pos_ = end;
      if (newline != std::string::npos) {
        ++pos_;
        line_start_ += line.size() + 1;
        ++lines_;
        return true;
      }
    }
  }

 private:
  bool refill() {
    constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
    if (gz_ != nullptr) {
      chunk_.resize(kChunk);
      const int n = gzread(gz_, chunk_.data(), static_cast<unsigned>(kChunk));
      int code = Z_OK;
      const char* why = gzerror(gz_, &code);
      // A truncated stream reads as a short one with Z_BUF_ERROR set.
      if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
        io::format_error(file_.path(), read_, fmt::format("the gzip-compressed file is corrupt ({})", why));
      }
      chunk_.resize(static_cast<std::size_t>(n));
      read_ += static_cast<std::uint64_t>(n);
      pos_ = 0;
      return n > 0;
    }
    const std::uint64_t n = std::min(kChunk, file_.size() - read_);
    if (n == 0) return false;
    chunk_.resize(n);
    file_.read_exact(read_, std::as_writable_bytes(std::span(chunk_.data(), chunk_.size())), "trace line");
    read_ += n;
    pos_ = 0;
    return true;
  }

  const io::InputFile& file_;
  gzFile gz_ = nullptr;
  std::string chunk_;
  std::size_t pos_ = 0;
  std::uint64_t read_ = 0;        // bytes of the file read so far
  std::uint64_t line_start_ = 0;  // offset of the next line
  std::uint64_t lines_ = 0;       // lines returned so far
};

}  // namespace

std::string_view trace_event_name(TraceEventKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : std::string_view{};
}

std::optional<TraceEventKind> trace_event_kind(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kNames); ++i) {
    if (kNames[i] == name) return static_cast<TraceEventKind>(i);
  }
  return std::nullopt;
}

void write_trace(std::ostream& out, const Trace& trace) {
  out << dump_line(header_json(trace.header)) << '\n';
  for (const TraceEvent& e : trace.events) out << dump_line(event_json(e)) << '\n';
}

void write_trace(const std::filesystem::path& path, const Trace& trace) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) write_trace(out, trace);
  if (out) out.close();
  if (!out) {
    const int error = errno;
    throw IoError(fmt::format("cannot write the trace {}: {}", path.string(), std::strerror(error)), path, error);
  }
}

struct TraceReader::State {
  explicit State(const std::filesystem::path& path) : file(path), lines(file) {}
  io::InputFile file;
  LineReader lines;
  std::string text;
  std::uint64_t number = 0;  // of the last line read
};

TraceReader::TraceReader(const std::filesystem::path& path) : path_(path), state_(std::make_unique<State>(path)) {
  std::uint64_t offset = 0;
  if (!read_line(offset)) io::format_error(path_, 0, "line 1: empty file: a trace starts with its header line");
  header_ = read_header(Line(path_, state_->number, offset, state_->text));
}

TraceReader::~TraceReader() = default;

bool TraceReader::read_line(std::uint64_t& offset) {
  if (!state_->lines.next(state_->text, offset)) return false;
  ++state_->number;
  if (state_->text.find_first_not_of(" \t\r") == std::string::npos) {
    io::format_error(path_, offset,
                     fmt::format("line {}: empty line (every line must be one JSON object)", state_->number));
  }
  return true;
}

std::optional<TraceEvent> TraceReader::next() {
  std::uint64_t offset = 0;
  if (!read_line(offset)) return std::nullopt;
  return read_event(Line(path_, state_->number, offset, state_->text), header_.source == "nuvec");
}

std::uint64_t TraceReader::line() const { return state_->number; }

Trace read_trace(const std::filesystem::path& path, std::size_t max_events) {
  TraceReader reader(path);
  Trace trace;
  trace.header = reader.header();
  while (std::optional<TraceEvent> e = reader.next()) {
    if (trace.events.size() == max_events) {
      io::format_error(path, 0,
                       fmt::format("line {}: more than {} events, the most a trace read whole may hold "
                                   "(the recorder's largest ring; docs/trace-format.md)",
                                   reader.line(), max_events));
    }
    trace.events.push_back(std::move(*e));
  }
  return trace;
}

}  // namespace nuvec
