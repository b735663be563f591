// The event trace as a device records it: each operation's events, in
// order, each with the statistics right after it; a bounded ring.
#include <gtest/gtest.h>

#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/nuvec.h"
#include "support/temp_file.h"

namespace {

using nuvec::TraceEventKind;
using Kind = TraceEventKind;

std::unique_ptr<nuvec::Device> make_device() {
  return std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), /*read_environment=*/false);
}

std::vector<Kind> kinds(const nuvec::Trace& trace) {
  std::vector<Kind> out;
  for (const auto& e : trace.events) out.push_back(e.kind);
  return out;
}

TEST(TraceRecorder, OffByDefaultAndMarksAreNothing) {
  auto device = make_device();
  device->mark("prefill");
  nuvec::Buffer b = device->new_buffer(1000);
  EXPECT_FALSE(device->trace().has_value());
}

TEST(TraceRecorder, RecordsEachOperationWithTheStatisticsAfterIt) {
  auto device = make_device();
  const std::size_t page = nuvec::page_size();
  nuvec_test::TempFile file(3 * page + 5, 1);
  device->start_trace(1024);
  std::vector<nuvec::MemoryStats> after;  // memory() after each operation

  device->mark("load");
  after.push_back(device->memory());
  nuvec::Buffer a = device->new_buffer(1000);
  after.push_back(device->memory());
  a.reset();
  after.push_back(device->memory());
  a = device->new_buffer(900);  // a hit on the 1024-byte block
  after.push_back(device->memory());
  nuvec::MappedFile m = device->map_file(file.path());
  after.push_back(device->memory());
  device->reset_peak();
  after.push_back(device->memory());
  m.reset();
  after.push_back(device->memory());
  device->set_memory_limit(1 << 20);
  after.push_back(device->memory());
  EXPECT_THROW(device->new_buffer(2 << 20), nuvec::OutOfMemory);
  after.push_back(device->memory());

  const nuvec::Trace trace = *device->trace();
  EXPECT_EQ(trace.header.source, "nuvec");
  EXPECT_EQ(trace.header.device, "cpu");
  EXPECT_EQ(trace.header.page_size, page);
  EXPECT_EQ(trace.header.dropped, 0u);
  ASSERT_EQ(kinds(trace), (std::vector<Kind>{Kind::mark, Kind::allocate, Kind::free, Kind::allocate, Kind::map,
                                              Kind::reset_peak, Kind::unmap, Kind::memory_limit, Kind::refuse}));
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(trace.events[i].seq, i);
    ASSERT_TRUE(trace.events[i].stats.has_value());
    EXPECT_EQ(*trace.events[i].stats, after[i]);
    if (i > 0) {
      EXPECT_GE(trace.events[i].t_ns, trace.events[i - 1].t_ns);
    }
  }
  EXPECT_EQ(trace.events[0].label, "load");
  EXPECT_EQ(trace.events[1].requested, 1000u);
  EXPECT_EQ(trace.events[1].size, 1024u);
  EXPECT_FALSE(trace.events[1].hit);
  EXPECT_EQ(trace.events[2].id, trace.events[1].id);
  EXPECT_TRUE(trace.events[3].hit);
  EXPECT_EQ(trace.events[3].id, trace.events[1].id);
  EXPECT_EQ(trace.events[4].size, nuvec::mapping_size(3 * page + 5));
  EXPECT_EQ(trace.events[4].label, file.path().string());
  EXPECT_EQ(trace.events[6].id, trace.events[4].id);
  EXPECT_EQ(trace.events[7].requested, 1u << 20);
  EXPECT_EQ(trace.events[8].requested, 2u << 20);
}

TEST(TraceRecorder, ReleasesAndWiringAreEvents) {
  auto device = make_device();
  const std::size_t page = nuvec::page_size();
  device->start_trace(64);
  nuvec::Buffer b = device->new_buffer(4 * page);
  device->set_wired_limit(8 * page);  // wires b
  b.reset();                          // b's block stays wired in the cache
  device->clear_cache();              // released, and so unwired
  const nuvec::Trace trace = *device->trace();
  EXPECT_EQ(kinds(trace), (std::vector<Kind>{Kind::allocate, Kind::wired_limit, Kind::wire, Kind::free,
                                             Kind::clear_cache, Kind::unwire, Kind::release}));
  EXPECT_EQ(trace.events.back().stats->cache, 0u);
  EXPECT_EQ(trace.events.back().stats->wired, 0u);
}

TEST(TraceRecorder, ARingDropsTheOldestEvents) {
  auto device = make_device();
  device->start_trace(4);
  for (int i = 0; i < 5; ++i) {
    // Appended, not `"m" + std::to_string(i)`: GCC 12 warns wrongly (-Wrestrict) about the insert that makes.
    std::string label = "m";
    label += std::to_string(i);
    device->mark(label);
  }
  const nuvec::Trace trace = *device->trace();
  ASSERT_EQ(trace.events.size(), 4u);
  EXPECT_EQ(trace.header.dropped, 1u);
  EXPECT_EQ(trace.events.front().label, "m1");
  EXPECT_EQ(trace.events.front().seq, 1u);
  EXPECT_EQ(trace.events.back().label, "m4");
}

TEST(TraceRecorder, StopAndRestartDiscard) {
  auto device = make_device();
  device->start_trace();
  device->mark("a");
  device->stop_trace();
  EXPECT_FALSE(device->trace().has_value());
  device->start_trace();
  EXPECT_TRUE(device->trace()->events.empty());
}

}  // namespace
