// Trace files (docs/trace-format.md): what is written reads back identically,
// each line carries exactly the fields its kind has, and a malformed file is
// a FormatError naming its line and that line's byte offset.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nuvec/error.h"
#include "nuvec/trace.h"
#include "support/temp_file.h"

namespace {

using nuvec::MemoryStats;
using nuvec::Trace;
using nuvec::TraceEvent;
using Kind = nuvec::TraceEventKind;

constexpr Kind kAllKinds[] = {Kind::allocate,     Kind::free,        Kind::release,     Kind::map,
                              Kind::unmap,        Kind::wire,        Kind::unwire,      Kind::refuse,
                              Kind::memory_limit, Kind::cache_limit, Kind::wired_limit, Kind::reset_peak,
                              Kind::clear_cache,  Kind::mark};

// Statistics with a different value in every field.
MemoryStats stats_for(std::uint64_t seed) {
  MemoryStats s;
  std::uint64_t v = seed * 1000;
  nuvec::for_each_field(s, [&](const char*, auto& field) { field = v++; });
  s.memory_limit = std::numeric_limits<std::size_t>::max();  // "unlimited" survives too
  return s;
}

// One event of `kind` with only the fields the format gives that kind.
TraceEvent event(Kind kind, std::uint64_t seq, bool with_stats) {
  TraceEvent e;
  e.seq = seq;
  e.t_ns = 1000 * seq + 7;
  e.thread = 1 + seq % 3;
  e.stream = static_cast<std::int64_t>(seq % 2) * 94'000'000'000LL;
  e.kind = kind;
  switch (kind) {
    case Kind::allocate:
      e.id = 0x7f00'0000'1000 + seq;
      e.requested = 1000;
      e.size = 1024;
      e.hit = seq % 2 == 0;
      break;
    case Kind::free:
    case Kind::release:
    case Kind::unmap:
    case Kind::wire:
    case Kind::unwire:
      e.id = 0x7f00'0000'1000 + seq;
      e.size = 4096;
      break;
    case Kind::map:
      e.id = 99;
      e.requested = 8192;
      e.size = 8192;
      e.label = "/models/\"quoted\" dir/model.safetensors";
      break;
    case Kind::refuse:
      e.requested = 1 << 30;
      e.label = "allocate 1.0 GiB";
      break;
    case Kind::memory_limit:
    case Kind::cache_limit:
    case Kind::wired_limit:
      e.requested = std::numeric_limits<std::uint64_t>::max();
      break;
    case Kind::reset_peak:
    case Kind::clear_cache:
      break;
    case Kind::mark:
      e.label = "préfill \\ \"phase\"\n\tdécode ✓ 日本語 🚀";
      break;
  }
  if (with_stats) e.stats = stats_for(seq);
  return e;
}

Trace sample_trace(const std::string& source) {
  Trace t;
  t.header.device = source == "nuvec" ? "cuda:0" : "torch 2.11 (cuda:0)";
  t.header.page_size = 65536;
  t.header.source = source;
  t.header.dropped = source == "nuvec" ? 3 : 0;
  std::uint64_t seq = 3;
  for (int round = 0; round < 2; ++round) {
    for (Kind k : kAllKinds) t.events.push_back(event(k, seq++, source == "nuvec"));
  }
  return t;
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A file holding `text`, removed afterwards.
nuvec_test::TempFile file_with(const std::string& text) {
  return nuvec_test::TempFile(std::vector<std::byte>(reinterpret_cast<const std::byte*>(text.data()),
                                                     reinterpret_cast<const std::byte*>(text.data()) + text.size()));
}

TEST(TraceFile, EventNamesRoundTrip) {
  for (Kind k : kAllKinds) EXPECT_EQ(nuvec::trace_event_kind(nuvec::trace_event_name(k)), k);
  EXPECT_EQ(nuvec::trace_event_name(Kind::memory_limit), "memory_limit");
  EXPECT_FALSE(nuvec::trace_event_kind("explode").has_value());
  EXPECT_FALSE(nuvec::trace_event_kind("").has_value());
}

TEST(TraceFile, WrittenTraceReadsBackIdentical) {
  for (const std::string source : {"nuvec", "torch"}) {
    SCOPED_TRACE(source);
    const Trace trace = sample_trace(source);
    nuvec_test::TempFile file(0, 0);
    nuvec::write_trace(file.path(), trace);
    EXPECT_EQ(nuvec::read_trace(file.path()), trace);

    std::ostringstream stream;
    nuvec::write_trace(stream, trace);
    EXPECT_EQ(stream.str(), slurp(file.path())) << "the stream and the file writer differ";
  }
}

// The real traces in traces/ are gzip-compressed: read_trace reads them as they are.
TEST(TraceFile, AGzipCompressedTraceReadsTheSame) {
  const Trace trace = sample_trace("nuvec");
  std::ostringstream stream;
  nuvec::write_trace(stream, trace);
  const std::string text = stream.str();
  nuvec_test::TempFile file(0, 0);
  gzFile gz = gzopen(file.path().c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
  EXPECT_EQ(nuvec::read_trace(file.path()), trace);
}

TEST(TraceFile, ACorruptGzipFileIsAFormatError) {
  const nuvec_test::TempFile file = file_with("\x1f\x8b\x08\x08 not really gzip\n");
  try {
    nuvec::read_trace(file.path());
    FAIL() << "a corrupt gzip file was read";
  } catch (const nuvec::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("gzip-compressed file is corrupt"), std::string::npos) << e.what();
  }
}

TEST(TraceFile, AnEmptyTraceIsItsHeaderLine) {
  const Trace trace;
  std::ostringstream out;
  nuvec::write_trace(out, trace);
  EXPECT_EQ(out.str(),
            "{\"nuvec_trace\":1,\"device\":\"cpu\",\"page_size\":4096,\"source\":\"nuvec\",\"dropped\":0}\n");
  const auto file = file_with(out.str());
  EXPECT_EQ(nuvec::read_trace(file.path()), trace);
}

// The format's table: which fields each kind carries.
std::set<std::string> expected_keys(Kind k, bool with_stats) {
  std::set<std::string> keys{"seq", "t_ns", "thread", "stream", "event"};
  const bool object = k == Kind::allocate || k == Kind::free || k == Kind::release || k == Kind::map ||
                      k == Kind::unmap || k == Kind::wire || k == Kind::unwire;
  const bool limit = k == Kind::memory_limit || k == Kind::cache_limit || k == Kind::wired_limit;
  if (object) keys.insert({"id", "size"});
  if (k == Kind::allocate || k == Kind::map || k == Kind::refuse || limit) keys.insert("requested");
  if (k == Kind::allocate) keys.insert("hit");
  if (k == Kind::mark || k == Kind::map || k == Kind::refuse) keys.insert("label");
  if (with_stats) keys.insert("stats");
  return keys;
}

TEST(TraceFile, EachLineCarriesExactlyItsKindsFields) {
  for (const bool with_stats : {true, false}) {
    const Trace trace = sample_trace(with_stats ? "nuvec" : "torch");
    std::ostringstream out;
    nuvec::write_trace(out, trace);
    std::istringstream lines(out.str());
    std::string line;
    std::getline(lines, line);
    const auto header = nlohmann::json::parse(line);
    EXPECT_EQ(header["nuvec_trace"], 1);
    for (const TraceEvent& e : trace.events) {
      ASSERT_TRUE(std::getline(lines, line));
      const auto j = nlohmann::json::parse(line);
      std::set<std::string> keys;
      for (const auto& [key, value] : j.items()) keys.insert(key);
      EXPECT_EQ(keys, expected_keys(e.kind, with_stats)) << line;
      EXPECT_EQ(j["event"], std::string(nuvec::trace_event_name(e.kind)));
      if (with_stats) {
        EXPECT_EQ(j["stats"].size(), 12u) << "all twelve MemoryStats fields";
      }
    }
  }
}

TEST(TraceFile, UnknownFieldsAndFieldsOfOtherKindsAreIgnored) {
  const std::string text =
      R"({"nuvec_trace": 1, "device": "cpu", "page_size": 4096, "source": "torch", "dropped": 0, "host": "h200"})"
      "\n"
      R"({"seq": 0, "t_ns": 5, "thread": 1, "stream": 0, "event": "allocate", "id": 7, "requested": 1000,)"
      R"( "size": 1024, "hit": false, "label": "ignored", "colour": {"nested": [1, 2]}})"
      "\n"
      R"({"seq": 1, "t_ns": 6, "thread": 1, "stream": 0, "event": "mark", "label": "decode", "id": 3})"
      "\n";
  const auto file = file_with(text);
  const Trace trace = nuvec::read_trace(file.path());
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.header.source, "torch");
  EXPECT_EQ(trace.events[0].id, 7u);
  EXPECT_EQ(trace.events[0].requested, 1000u);
  EXPECT_EQ(trace.events[0].label, "");
  EXPECT_FALSE(trace.events[0].stats.has_value());
  EXPECT_EQ(trace.events[1].label, "decode");
  EXPECT_EQ(trace.events[1].id, 0u);
}

TEST(TraceFile, AFileWithoutATrailingNewlineReads) {
  const auto file = file_with(R"({"nuvec_trace": 1, "device": "cpu", "page_size": 4096, "source": "x", "dropped": 0})"
                              "\n"
                              R"({"seq": 0, "t_ns": 5, "thread": 1, "stream": 0, "event": "reset_peak"})");
  EXPECT_EQ(nuvec::read_trace(file.path()).events.size(), 1u);
}

TEST(TraceFile, AMissingFileIsAnIoError) {
  EXPECT_THROW(nuvec::read_trace("/nonexistent/trace.jsonl"), nuvec::IoError);
}

// ---------------------------------------------------------------------------
// Malformed files: each a FormatError naming the line and its byte offset.

const std::string kHeader =
    R"({"nuvec_trace": 1, "device": "cpu", "page_size": 4096, "source": "torch", "dropped": 0})";
const std::string kNuvecHeader =
    R"({"nuvec_trace": 1, "device": "cpu", "page_size": 4096, "source": "nuvec", "dropped": 0})";
const std::string kGood = R"({"seq": 0, "t_ns": 5, "thread": 1, "stream": 0, "event": "mark", "label": "x"})";
const std::string kStats =
    R"("stats": {"active": 0, "peak": 0, "active_with_mapped": 0, "peak_with_mapped": 0, "cache": 0,)"
    R"( "memory_limit": 8, "cache_limit": 8, "system_allocations": 0, "wired_limit": 0, "wired": 0,)"
    R"( "mapped": 0, "wired_mapped": 0})";

struct Malformed {
  const char* name;
  std::vector<std::string> lines;
  std::size_t bad_line;  // 1-based
  const char* reason;    // part of the message
};

void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

std::string event_line(const std::string& fields) {
  return R"({"seq": 1, "t_ns": 5, "thread": 1, "stream": 0, )" + fields + "}";
}

const Malformed kMalformed[] = {
    {"EmptyFile", {}, 1, "empty file"},
    {"NoHeader", {kGood, kGood}, 1, "missing header"},
    {"UnknownVersion",
     {R"({"nuvec_trace": 2, "device": "cpu", "page_size": 4096, "source": "x", "dropped": 0})"},
     1,
     "unknown trace version 2"},
    {"VersionNotANumber",
     {R"({"nuvec_trace": "1", "device": "cpu", "page_size": 4096, "source": "x", "dropped": 0})"},
     1,
     "'nuvec_trace' must be a non-negative integer"},
    {"HeaderMissingSource",
     {R"({"nuvec_trace": 1, "device": "cpu", "page_size": 4096, "dropped": 0})"},
     1,
     "missing field 'source'"},
    {"HeaderNegativePageSize",
     {R"({"nuvec_trace": 1, "device": "cpu", "page_size": -4096, "source": "x", "dropped": 0})"},
     1,
     "'page_size' is negative"},
    {"NotJson", {kHeader, kGood, R"({"seq": 2, "t_ns": )", kGood}, 3, "not JSON"},
    {"NotUtf8", {kHeader, event_line("\"event\": \"mark\", \"label\": \"\xff\xfe\"")}, 2, "not JSON"},
    {"NotAnObject", {kHeader, "[1, 2, 3]"}, 2, "expected a JSON object, found array"},
    // nlohmann reports a number past double's range as out_of_range, not a
    // parse error (found by trace_fuzz).
    {"NumberOutOfRange", {kHeader, event_line(R"("event": "mark", "label": "x", "t": 1e9752430895104)")}, 2, "not JSON"},
    {"BlankLine", {kHeader, kGood, "", kGood}, 3, "empty line"},
    {"MissingSeq",
     {kHeader, R"({"t_ns": 5, "thread": 1, "stream": 0, "event": "mark", "label": "x"})"},
     2,
     "missing field 'seq'"},
    {"MissingEvent", {kHeader, kGood, event_line(R"("id": 1)")}, 3, "missing field 'event'"},
    {"UnknownKind", {kHeader, kGood, kGood, event_line(R"("event": "explode")")}, 4, "unknown event kind 'explode'"},
    {"RequestedAsString",
     {kHeader, event_line(R"("event": "allocate", "id": 1, "requested": "1000", "size": 1024, "hit": false)")},
     2,
     "'requested' must be a non-negative integer"},
    {"NegativeSize", {kHeader, event_line(R"("event": "free", "id": 1, "size": -1)")}, 2, "'size' is negative"},
    {"FractionalSeq",
     {kHeader, R"({"seq": 1.5, "t_ns": 5, "thread": 1, "stream": 0, "event": "reset_peak"})"},
     2,
     "'seq' must be a non-negative integer"},
    {"HugeNumber",
     {kHeader, event_line(R"("event": "cache_limit", "requested": 18446744073709551616)")},
     2,
     "'requested' must be a non-negative integer"},
    {"ThreadTooLarge",
     {kHeader, R"({"seq": 1, "t_ns": 5, "thread": 4294967296, "stream": 0, "event": "mark", "label": ""})"},
     2,
     "'thread' is 4294967296, more than its limit"},
    {"HitNotABool",
     {kHeader, event_line(R"("event": "allocate", "id": 1, "requested": 10, "size": 256, "hit": 0)")},
     2,
     "'hit' must be true or false"},
    {"AllocateWithoutId",
     {kHeader, event_line(R"("event": "allocate", "requested": 10, "size": 256, "hit": true)")},
     2,
     "missing field 'id'"},
    {"MarkWithoutLabel", {kHeader, event_line(R"("event": "mark")")}, 2, "missing field 'label'"},
    {"LabelNotAString", {kHeader, event_line(R"("event": "mark", "label": 5)")}, 2, "'label' must be a string"},
    {"NuvecTraceWithoutStats",
     {kNuvecHeader, event_line(R"("event": "reset_peak", )" + kStats), kGood},
     3,
     "missing field 'stats'"},
    {"StatsNotAnObject",
     {kNuvecHeader, event_line(R"("event": "reset_peak", "stats": [])")},
     2,
     "'stats' must be an object"},
    {"StatsMissingAField",
     {kNuvecHeader, event_line(R"("event": "reset_peak", "stats": {"active": 0})")},
     2,
     "stats: missing field 'peak'"},
    {"StatsNegative",
     {kNuvecHeader, event_line(R"("event": "reset_peak", )" +
                               std::string(kStats).replace(kStats.find("\"cache\": 0"), 10, "\"cache\": -256"))},
     2,
     "stats: field 'cache' is negative"},
};

class TraceFileMalformed : public testing::TestWithParam<Malformed> {};

TEST_P(TraceFileMalformed, IsAFormatErrorNamingTheLine) {
  const Malformed& m = GetParam();
  std::string text;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < m.lines.size(); ++i) {
    if (i + 1 == m.bad_line) offset = text.size();
    text += m.lines[i] + "\n";
  }
  const auto file = file_with(text);
  try {
    nuvec::read_trace(file.path());
    FAIL() << "read a malformed trace";
  } catch (const nuvec::FormatError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("line " + std::to_string(m.bad_line) + ":"), std::string::npos) << message;
    EXPECT_NE(message.find(m.reason), std::string::npos) << message;
    EXPECT_NE(message.find(file.path().string()), std::string::npos) << message;
    EXPECT_EQ(e.offset(), offset) << message;
    EXPECT_EQ(e.file(), file.path());
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, TraceFileMalformed, testing::ValuesIn(kMalformed),
                         [](const testing::TestParamInfo<Malformed>& info) { return std::string(info.param.name); });

}  // namespace
