// Tags (nuvec/trace_tag.h): every event a device records carries the
// innermost tag open on the recording thread for that device; tags nest,
// belong to one device and one thread, and survive a trace file's round trip.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/nuvec.h"
#include "support/temp_file.h"

namespace {

using Kind = nuvec::TraceEventKind;

std::unique_ptr<nuvec::Device> make_device() {
  return std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), /*read_environment=*/false);
}

// (kind, tag) of each event.
std::vector<std::pair<Kind, std::string>> tagged(const nuvec::Trace& trace) {
  std::vector<std::pair<Kind, std::string>> out;
  for (const auto& e : trace.events) out.emplace_back(e.kind, e.tag);
  return out;
}

TEST(TraceTag, EventsCarryTheInnermostTagAndNestingRestoresTheOuter) {
  auto device = make_device();
  device->start_trace(64);
  nuvec::Buffer untagged = device->new_buffer(100);
  {
    nuvec::Tag weights(*device, "weights");
    nuvec::Buffer w = device->new_buffer(1000);
    {
      nuvec::Tag scratch(*device, "a scratch tag longer than fifteen bytes");
      nuvec::Buffer s = device->new_buffer(2000);
      device->mark("inner");
    }  // s freed inside its tag, then the tag closes
    device->mark("outer again");
  }  // w is freed before its tag closes (scope objects end in reverse order)
  device->mark("none");
  const auto events = tagged(*device->trace());
  const std::vector<std::pair<Kind, std::string>> expected = {
      {Kind::allocate, ""},
      {Kind::allocate, "weights"},
      {Kind::allocate, "a scratch tag longer than fifteen bytes"},
      {Kind::mark, "a scratch tag longer than fifteen bytes"},
      {Kind::free, "a scratch tag longer than fifteen bytes"},
      {Kind::mark, "weights"},
      {Kind::free, "weights"},
      {Kind::mark, ""},
  };
  EXPECT_EQ(events, expected);
}

TEST(TraceTag, ATagNamesOnlyItsDeviceAndOnlyItsThread) {
  auto a = make_device();
  auto b = make_device();
  a->start_trace(16);
  b->start_trace(16);
  nuvec::Tag on_a(*a, "kv_cache");
  EXPECT_EQ(nuvec::Tag::current(*a), "kv_cache");
  EXPECT_EQ(nuvec::Tag::current(*b), "");
  nuvec::Buffer x = b->new_buffer(64);
  std::thread other([&] { nuvec::Buffer y = a->new_buffer(64); });
  other.join();
  EXPECT_EQ(b->trace()->events.at(0).tag, "");
  EXPECT_EQ(a->trace()->events.at(0).tag, "");  // the other thread opened no tag
  nuvec::Buffer z = a->new_buffer(64);
  EXPECT_EQ(a->trace()->events.back().tag, "kv_cache");
}

TEST(TraceTag, ATagOpenBeforeTracingStartsStillCounts) {
  auto device = make_device();
  nuvec::Tag logits(*device, "logits");
  device->start_trace(8);
  nuvec::Buffer l = device->new_buffer(64);
  EXPECT_EQ(device->trace()->events.at(0).tag, "logits");
}

TEST(TraceTag, TagsOutOfOrderUnlinkOnlyThemselves) {
  auto device = make_device();
  auto outer = std::make_unique<nuvec::Tag>(*device, "outer");
  auto inner = std::make_unique<nuvec::Tag>(*device, "inner");
  outer.reset();  // as a Python `with` closed late might
  EXPECT_EQ(nuvec::Tag::current(*device), "inner");
  inner.reset();
  EXPECT_EQ(nuvec::Tag::current(*device), "");
}

TEST(TraceTag, TheTagRoundTripsThroughATraceFileAndIsLeftOutWhenEmpty) {
  auto device = make_device();
  device->start_trace(16);
  nuvec::Buffer plain = device->new_buffer(64);
  nuvec::Buffer tagged_buffer;
  {
    nuvec::Tag t(*device, "activations");
    tagged_buffer = device->new_buffer(64);
  }
  const nuvec::Trace trace = *device->trace();
  std::ostringstream text;
  nuvec::write_trace(text, trace);
  EXPECT_EQ(text.str().find("\"tag\""), text.str().rfind("\"tag\""));  // exactly one event has a tag
  EXPECT_NE(text.str().find("\"tag\":\"activations\""), std::string::npos);
  nuvec_test::TempFile file(0, 0);
  nuvec::write_trace(file.path(), trace);
  EXPECT_EQ(nuvec::read_trace(file.path()), trace);
}

}  // namespace
