// Inputs as an adversary gives them (issue "every input bounded, every
// refusal clean"): paths that are not regular files, compressed traces that
// expand past every bound, environment variables, and the decisions taken
// where the reference readers disagree with a lenient one. Each test is
// named for its category; every refusal must come at once, say what stood
// in the way, and change no statistic.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "cpu/cpu_backend.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/io/gguf.h"
#include "nuvec/io/npy.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/trace.h"
#include "support/scoped_env.h"
#include "support/temp_file.h"
#include "support/text.h"
#include "nuvec/trace/replay.h"

namespace {

namespace fs = std::filesystem;

using nuvec_test::contains;

// A temporary directory (tests/support) and the hostile files made in it.
class Scratch {
 public:
  fs::path fifo(const std::string& name) const {
    const fs::path p = dir_ / name;
    if (::mkfifo(p.c_str(), 0600) != 0) throw std::runtime_error("mkfifo");
    return p;
  }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  fs::path gzip(const std::string& name, const std::string& text, std::size_t repeat = 1) const {
    const fs::path p = dir_ / name;
    gzFile f = gzopen(p.c_str(), "wb1");
    for (std::size_t i = 0; i < repeat; ++i) gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
    return p;
  }
  const fs::path& dir() const { return dir_.path(); }

 private:
  nuvec_test::TempDir dir_;
};

std::unique_ptr<nuvec::Device> fresh_device() {
  return std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), false);
}

template <class F>
std::string io_error_of(F&& f) {
  try {
    f();
  } catch (const nuvec::IoError& e) {
    return e.what();
  }
  return "(no IoError)";
}

// 1. A FIFO, a directory or a device where a file is expected: refused at
// once (a FIFO opened for reading would wait for a writer forever; the test's
// timeout catches a regression), through every loader and reader.
TEST(HostileNonRegularFile, EveryLoaderRefusesAFifoAtOnce) {
  const Scratch s;
  auto device = fresh_device();
  const nuvec::MemoryStats before = device->memory();
  const fs::path st = s.fifo("f.safetensors");
  EXPECT_TRUE(contains(io_error_of([&] { nuvec::io::load_safetensors(*device, st); }), "a FIFO (named pipe)"));
  EXPECT_TRUE(contains(io_error_of([&] { nuvec::io::footprint(st); }), "not a regular file"));
  EXPECT_TRUE(contains(io_error_of([&] { nuvec::io::load_safetensors(*device, s.fifo("m.index.json")); }),
                       "a FIFO"));
  EXPECT_TRUE(contains(io_error_of([&] { nuvec::io::load_npy(*device, s.fifo("a.npy")); }), "a FIFO"));
  EXPECT_TRUE(contains(io_error_of([&] { nuvec::io::load_gguf(*device, s.fifo("m.gguf")); }), "a FIFO"));
  EXPECT_TRUE(contains(io_error_of([&] { nuvec::read_trace(s.fifo("t.jsonl")); }), "a FIFO"));
  EXPECT_TRUE(contains(io_error_of([&] { nuvec::io::load_npy(*device, "/dev/zero"); }), "a character device"));
  EXPECT_TRUE(contains(io_error_of([&] { nuvec::read_trace(s.dir()); }), "a directory"));
  // A model directory whose model.safetensors is a FIFO.
  fs::create_directory(s.dir() / "model");
  s.fifo("model/model.safetensors");
  EXPECT_TRUE(contains(io_error_of([&] { nuvec::io::load_safetensors(*device, s.dir() / "model"); }), "a FIFO"));
  // The device's own mapping call, below every loader.
  EXPECT_TRUE(contains(io_error_of([&] { device->map_file(s.fifo("raw.bin")); }), "not a regular file"));
  EXPECT_TRUE(contains(io_error_of([&] { device->map_file("/dev/zero"); }), "not a regular file"));
  EXPECT_EQ(device->memory(), before);
}

TEST(HostileNonRegularFile, TraceOutputThatCannotBeWrittenFailsWhenTheDeviceIsMade) {
  const Scratch s;
  const fs::path fifo = s.fifo("trace.jsonl");
  {
    nuvec_test::ScopedEnv trace("NUVEC_TRACE", fifo.c_str());
    EXPECT_THROW(nuvec::Device::create_cpu(), nuvec::IoError);  // no reader: refused, not blocked
  }
  {
    const std::string missing = (s.dir() / "no" / "such" / "dir" / "t.jsonl").string();
    nuvec_test::ScopedEnv trace("NUVEC_TRACE", missing.c_str());
    try {
      nuvec::Device::create_cpu();
      ADD_FAILURE() << "an unwritable NUVEC_TRACE was accepted";
    } catch (const nuvec::IoError& e) {
      EXPECT_TRUE(contains(e.what(), "NUVEC_TRACE")) << e.what();
      EXPECT_TRUE(contains(e.what(), missing)) << e.what();
    }
  }
  {
    const std::string ok = (s.dir() / "t.jsonl").string();
    nuvec_test::ScopedEnv trace("NUVEC_TRACE", ok.c_str());
    EXPECT_NO_THROW(nuvec::Device::create_cpu());
  }
}

// 2. Traces read within bounds: a decompression bomb of one endless line, a
// gzip file named without .gz, more events than a reader holds.
TEST(HostileTrace, AnEndlessCompressedLineIsRefusedNamingTheLine) {
  const Scratch s;
  const std::string header = R"({"nuvec_trace": 1, "device": "cpu", "page_size": 4096, "source": "torch", "dropped": 0})";
  // 64 MiB of spaces compress to about 64 KiB: the reader must stop at the
  // line cap, not hold the line.
  const fs::path bomb = s.gzip("bomb.jsonl.gz", header + "\n" + std::string(1 << 20, ' '), 64);
  try {
    nuvec::read_trace(bomb);
    ADD_FAILURE() << "an endless line was read";
  } catch (const nuvec::FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "line 2: longer than 1048576 bytes")) << e.what();
    EXPECT_EQ(e.offset(), header.size() + 1);
  }
  // gzip content without the .gz suffix is still read by its magic.
  const std::string event = R"({"seq": 0, "t_ns": 0, "thread": 1, "stream": 0, "event": "mark", "label": "x"})";
  const fs::path unnamed = s.gzip("trace.jsonl", header + "\n" + event + "\n");
  EXPECT_EQ(nuvec::read_trace(unnamed).events.size(), 1u);
}

TEST(HostileTrace, TheReaderStreamsEventsAndReadTraceStopsAtItsBound) {
  const Scratch s;
  const std::string header = R"({"nuvec_trace": 1, "device": "cpu", "page_size": 4096, "source": "torch", "dropped": 0})";
  const std::string event = R"({"seq": 0, "t_ns": 0, "thread": 1, "stream": 0, "event": "mark", "label": "x"})";
  std::string text = header + "\n";
  for (int i = 0; i < 5; ++i) text += event + "\n";
  nuvec::TraceReader reader(s.write("t.jsonl", text));
  EXPECT_EQ(reader.header().source, "torch");
  int n = 0;
  while (reader.next()) ++n;
  EXPECT_EQ(n, 5);
  EXPECT_EQ(reader.line(), 6u);
  // One event past the bound: refused naming its line, not read into memory.
  try {
    nuvec::read_trace(s.write("many.jsonl", text), 4);
    ADD_FAILURE() << "a trace past the bound was read whole";
  } catch (const nuvec::FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "line 6: more than 4 events")) << e.what();
  }
  EXPECT_EQ(nuvec::read_trace(s.dir() / "many.jsonl", 5).events.size(), 5u);
}

// 4. Environment: checked whenever set, bounded; the ring grows as it fills.
TEST(HostileEnvironment, TraceEventsIsCheckedEvenWithoutTrace) {
  nuvec_test::ScopedEnv no_trace("NUVEC_TRACE", nullptr);
  for (const char* bad : {"abc", "0", "-1", "1.5", "5000000", "99999999999999999999999"}) {
    nuvec_test::ScopedEnv events("NUVEC_TRACE_EVENTS", bad);
    try {
      nuvec::Device::create_cpu();
      ADD_FAILURE() << "NUVEC_TRACE_EVENTS=" << bad << " was accepted";
    } catch (const nuvec::InvalidArgument& e) {
      EXPECT_TRUE(contains(e.what(), "NUVEC_TRACE_EVENTS")) << e.what();
      EXPECT_TRUE(contains(e.what(), "2097152")) << e.what();
    }
  }
  nuvec_test::ScopedEnv events("NUVEC_TRACE_EVENTS", "2097152");
  EXPECT_NO_THROW(nuvec::Device::create_cpu());
}

TEST(HostileEnvironment, BytesWithoutAUnitAreWhole) {
  for (const char* bad : {"1.5", "0.5", "10.0", "3.b"}) {
    nuvec_test::ScopedEnv limit("NUVEC_MEMORY_LIMIT", bad);
    EXPECT_THROW(nuvec::Device::create_cpu(), nuvec::InvalidArgument) << bad;
  }
  nuvec_test::ScopedEnv limit("NUVEC_MEMORY_LIMIT", "1.5KiB");
  EXPECT_EQ(nuvec::Device::create_cpu()->memory().memory_limit, 1536u);
}

long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

TEST(HostileEnvironment, TheLargestRingTakesNoMemoryUntilItFills) {
  auto device = fresh_device();
  const long before = resident_kib();
  device->start_trace(nuvec::kMaxTraceEvents);  // ~400 MB if made up front
  { nuvec::Buffer b = device->new_buffer(100); }
  EXPECT_LT(resident_kib() - before, 16 * 1024);
  EXPECT_EQ(device->trace()->events.size(), 2u);  // allocate, free
  EXPECT_THROW(device->start_trace(nuvec::kMaxTraceEvents + 1), nuvec::InvalidArgument);
}

// 8. Decisions, as the reference readers take them (docs/checkpoints.md,
// docs/trace-format.md).
TEST(HostileDecisions, SafetensorsHeaderWithAByteOrderMarkIsRefused) {
  const Scratch s;
  const std::string json = "\xEF\xBB\xBF{}      ";
  std::string file(8, '\0');
  file[0] = static_cast<char>(json.size());
  const fs::path p = s.write("bom.safetensors", file + json);
  auto device = fresh_device();
  try {
    nuvec::io::load_safetensors(*device, p);
    ADD_FAILURE() << "a BOM was accepted";
  } catch (const nuvec::FormatError& e) {
    EXPECT_EQ(e.offset(), 8u);
    EXPECT_TRUE(contains(e.what(), "byte-order mark")) << e.what();
  }
}

TEST(HostileDecisions, NpyWithMoreThan64DimensionsIsRefused) {
  const auto header_of = [](std::size_t dims) {
    std::string shape = "(";
    for (std::size_t i = 0; i < dims; ++i) shape += "1,";
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "), }";
    while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
    dict += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(dict.size() & 0xff);
    out += static_cast<char>(dict.size() >> 8);
    return out + dict + std::string(4, '\0');
  };
  const auto parse = [](const std::string& bytes) {
    const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
    return nuvec::io::parse_npy_header(std::span(p, bytes.size()), bytes.size(), "a.npy");
  };
  EXPECT_EQ(parse(header_of(64)).shape.size(), 64u);
  try {
    parse(header_of(65));
    ADD_FAILURE() << "65 dimensions were accepted";
  } catch (const nuvec::FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "more than 64 dimensions")) << e.what();
  }
}

TEST(HostileDecisions, TraceMapOfAnImpossibleSizeNamesTheTraceAndTheEvent) {
  nuvec::Trace trace;
  trace.header.source = "torch";
  nuvec::TraceEvent map;
  map.seq = 7;
  map.kind = nuvec::TraceEventKind::map;
  map.id = 1;
  map.size = UINT64_MAX;
  trace.events.push_back(map);
  auto device = fresh_device();
  nuvec::ReplayOptions options;
  options.trace_path = "huge.jsonl";
  try {
    nuvec::replay(trace, *device, options);
    ADD_FAILURE() << "a map of 2^64 - 1 bytes was replayed";
  } catch (const nuvec::FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "huge.jsonl: event seq 7 (map)")) << e.what();
    EXPECT_TRUE(contains(e.what(), "no file can be that large")) << e.what();
  }
}

}  // namespace
