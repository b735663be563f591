// Replay (src/trace/replay.h): the figures of a hand-made trace, refusals
// under a limit, malformed sequences, glibc malloc side by side, and — the
// contract — a trace of real operations replayed on a fresh device gives
// back its recorded statistics, event by event.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/nuvec.h"
#include "nuvec/trace.h"
#include "support/temp_file.h"
#include "support/text.h"
#include "nuvec/trace/replay.h"

namespace {

using nuvec::MemoryStats;
using nuvec::ReplayOptions;
using nuvec::ReplayReport;
using nuvec::Trace;
using nuvec::TraceEvent;
using Kind = nuvec::TraceEventKind;

using nuvec_test::kKiB;
using nuvec_test::kMiB;

std::unique_ptr<nuvec::Device> fresh_device() { return nuvec::replay_device("cpu"); }

std::size_t rounded(std::size_t len) { return *nuvec::allocation_size(len); }

using nuvec_test::contains;

// Hand-made traces, one event at a time (seq counts up; no statistics unless given).
class TraceBuilder {
 public:
  explicit TraceBuilder(std::string source = "test") {
    trace_.header.source = std::move(source);
    trace_.header.page_size = nuvec::page_size();
  }
  TraceBuilder& allocate(std::uint64_t id, std::uint64_t bytes) { return add(Kind::allocate, id, bytes, bytes); }
  TraceBuilder& free(std::uint64_t id) { return add(Kind::free, id); }
  TraceBuilder& map(std::uint64_t id, std::uint64_t bytes) { return add(Kind::map, id, bytes, bytes, "m"); }
  TraceBuilder& unmap(std::uint64_t id) { return add(Kind::unmap, id); }
  TraceBuilder& release(std::uint64_t id) { return add(Kind::release, id); }
  TraceBuilder& limit(Kind kind, std::uint64_t bytes) { return add(kind, 0, bytes); }
  TraceBuilder& op(Kind kind, std::string label = {}) { return add(kind, 0, 0, 0, std::move(label)); }
  TraceBuilder& add(Kind kind, std::uint64_t id = 0, std::uint64_t requested = 0, std::uint64_t size = 0,
                    std::string label = {}, std::optional<MemoryStats> stats = std::nullopt) {
    TraceEvent e;
    e.seq = trace_.events.size();
    e.t_ns = 10 * e.seq;
    e.thread = 1;
    e.kind = kind;
    e.id = id;
    e.requested = requested;
    e.size = size;
    e.label = std::move(label);
    e.stats = stats;
    trace_.events.push_back(std::move(e));
    return *this;
  }
  Trace& trace() { return trace_; }

 private:
  Trace trace_;
};

// ---------------------------------------------------------------------------
// The figures.

TEST(TraceReplay, ReportsPeakLivePeakHeldAndFragmentation) {
  TraceBuilder b;
  b.op(Kind::mark, "load").allocate(1, 1000).allocate(2, 5000).free(1).allocate(3, 1000).free(2).free(3);
  auto device = fresh_device();
  const ReplayReport r = nuvec::replay(b.trace(), *device);

  EXPECT_EQ(r.events, 7u);
  EXPECT_EQ(r.allocations, 3u);
  EXPECT_EQ(r.frees, 3u);
  EXPECT_EQ(r.refusals, 0u);
  EXPECT_EQ(r.peak_live, 6000u);
  EXPECT_EQ(r.distinct_sizes_at_peak_live, 2u);
  EXPECT_EQ(r.peak_held, rounded(1000) + rounded(5000));
  EXPECT_DOUBLE_EQ(r.fragmentation(), double(rounded(1000) + rounded(5000)) / 6000.0);
  // Two misses (the third allocation is a cache hit), from the CPU arena's
  // two reservations: one for blocks below a page, one for the rest.
  EXPECT_EQ(r.system_allocations, 2u) << "the third allocation is a cache hit";
  EXPECT_EQ(r.reservations, 2u);
  EXPECT_EQ(r.times.allocates, 3u);
  EXPECT_EQ(r.times.frees, 3u);
  EXPECT_GT(r.times.ns_per_op(), 0.0);
  EXPECT_EQ(r.final_stats.active, 0u);
  EXPECT_EQ(r.final_stats.cache, rounded(1000) + rounded(5000));
  EXPECT_EQ(r.final_stats.peak, rounded(1000) + rounded(5000));
  EXPECT_FALSE(r.mismatch.has_value());
  EXPECT_EQ(r.verified, 0u);
}

TEST(TraceReplay, LimitsCachePeaksAndPolicyEventsAreReplayedOrSkipped) {
  TraceBuilder b;
  b.allocate(1, 64 * kKiB).allocate(2, 64 * kKiB).free(1).release(1).op(Kind::wire).op(Kind::refuse);
  b.limit(Kind::cache_limit, 0).op(Kind::reset_peak).allocate(3, 1000).limit(Kind::memory_limit, 1 * kMiB);
  b.free(3).op(Kind::clear_cache).limit(Kind::wired_limit, 0);
  auto device = fresh_device();
  const ReplayReport r = nuvec::replay(b.trace(), *device);
  EXPECT_EQ(r.final_stats.memory_limit, 1 * kMiB);
  EXPECT_EQ(r.final_stats.cache_limit, 0u);
  EXPECT_EQ(r.final_stats.cache, 0u);
  EXPECT_EQ(r.final_stats.active, 64 * kKiB);
  EXPECT_EQ(r.final_stats.peak, 64 * kKiB + rounded(1000)) << "reset_peak took the peak down to 64 KiB first";
  EXPECT_EQ(r.peak_held, 128 * kKiB);
  EXPECT_EQ(r.peak_live, 128 * kKiB);
  EXPECT_EQ(device->memory().active, 0u) << "the replay frees what is still live";
}

TEST(TraceReplay, AllocationsTheLimitRefusesAreCountedAndTheReplayGoesOn) {
  TraceBuilder b;
  b.limit(Kind::memory_limit, 1024 * kMiB);  // replaced by the option below
  b.allocate(1, 8 * kKiB).allocate(2, 8 * kKiB).allocate(3, 8 * kKiB).free(3).free(1).allocate(4, 8 * kKiB);
  b.map(5, 3 * nuvec::page_size()).unmap(5).free(2).free(4);
  auto device = fresh_device();
  ReplayOptions options;
  options.memory_limit = 16 * kKiB;
  const ReplayReport r = nuvec::replay(b.trace(), *device, options);
  EXPECT_EQ(r.refusals, 2u) << "allocation 3 and the mapping";
  EXPECT_EQ(r.allocations, 4u);
  EXPECT_EQ(r.mappings, 1u);
  EXPECT_EQ(r.peak_live, 16 * kKiB);
  EXPECT_EQ(r.peak_held, 16 * kKiB);
  EXPECT_EQ(r.system_allocations, 2u) << "allocation 4 reused allocation 1's block";
  EXPECT_EQ(r.reservations, 1u);
  EXPECT_EQ(r.final_stats.memory_limit, 16 * kKiB);

  // The same trace's own limit of 1 GiB refuses nothing.
  auto unlimited = fresh_device();
  EXPECT_EQ(nuvec::replay(b.trace(), *unlimited).refusals, 0u);
}

TEST(TraceReplay, MappingsCountTheirRecordedSize) {
  const std::size_t page = nuvec::page_size();
  TraceBuilder b;
  b.map(1, 3 * page).map(2, 3 * page).map(3, 5 * page).unmap(2).allocate(4, 100);
  auto device = fresh_device();
  const ReplayReport r = nuvec::replay(b.trace(), *device);
  EXPECT_EQ(r.mappings, 3u);
  EXPECT_EQ(r.final_stats.mapped, 8 * page);
  EXPECT_EQ(r.final_stats.peak_with_mapped, 11 * page) << "three mappings were live at once";
  EXPECT_EQ(r.peak_live, 100u) << "mappings are not live buffers";
  EXPECT_EQ(device->memory().mapped, 0u);
}

TEST(TraceReplay, ALimitTheDeviceRefusesNamesTheEvent) {
  TraceBuilder b;
  b.allocate(1, 1 * kMiB).limit(Kind::memory_limit, 4 * kKiB);
  auto device = fresh_device();
  try {
    nuvec::replay(b.trace(), *device);
    FAIL() << "set a memory limit below active";
  } catch (const nuvec::InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "event seq 1")) << e.what();
  }
  EXPECT_EQ(device->memory().active, 0u);
}

// ---------------------------------------------------------------------------
// Malformed sequences.

std::string sequence_error(Trace trace) {
  auto device = fresh_device();
  ReplayOptions options;
  options.trace_path = "t.jsonl";
  try {
    nuvec::replay(trace, *device, options);
  } catch (const nuvec::FormatError& e) {
    EXPECT_EQ(device->memory().active, 0u);
    try {
      nuvec::replay_malloc(trace, options);
      ADD_FAILURE() << "replay_malloc accepted what replay refused";
    } catch (const nuvec::FormatError&) {
    }
    return e.what();
  }
  return "(no error)";
}

TEST(TraceReplay, MalformedSequencesAreFormatErrorsNamingTheEvent) {
  {
    TraceBuilder b;
    b.allocate(1, 10).allocate(2, 10).free(1).free(1);
    const std::string message = sequence_error(b.trace());
    EXPECT_TRUE(contains(message, "t.jsonl: event seq 3 (free): free of buffer id 1, which is not live")) << message;
  }
  {
    TraceBuilder b;
    b.allocate(1, 10).allocate(7, 10).allocate(7, 10);
    const std::string message = sequence_error(b.trace());
    EXPECT_TRUE(contains(message, "event seq 2 (allocate): allocate of buffer id 7, which is live (since seq 1)"))
        << message;
  }
  {
    TraceBuilder b;
    b.map(1, 4096).unmap(2);
    const std::string message = sequence_error(b.trace());
    EXPECT_TRUE(contains(message, "event seq 1 (unmap): unmap of mapping id 2")) << message;
  }
  {
    TraceBuilder b;
    b.free(9);
    b.trace().header.dropped = 12;
    const std::string message = sequence_error(b.trace());
    EXPECT_TRUE(contains(message, "dropped 12 events")) << message;
  }
}

// ---------------------------------------------------------------------------
// glibc malloc, side by side.

TEST(TraceReplay, MallocReplaysTheSameAllocations) {
  TraceBuilder b;
  b.allocate(1, 1 * kMiB).allocate(2, 3 * kMiB).free(1).allocate(3, 100).op(Kind::mark, "x").free(2).free(3);
  b.map(4, 4096).unmap(4);
  const nuvec::MallocReport m = nuvec::replay_malloc(b.trace());
  EXPECT_EQ(m.allocations, 3u);
  EXPECT_EQ(m.frees, 3u);
  EXPECT_EQ(m.refusals, 0u);
  EXPECT_EQ(m.peak_live, 4 * kMiB);
  EXPECT_EQ(m.times.allocates, 3u);
  EXPECT_EQ(m.times.frees, 3u);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // Sanitizers replace malloc; mallinfo2 then sees glibc's heap only.
  EXPECT_GE(m.peak_held, 4 * kMiB);
  EXPECT_GE(m.fragmentation(), 1.0);
#endif
}

// ---------------------------------------------------------------------------
// Replaying what a device did reproduces its statistics, event by event.

// A seeded mix of every operation a replay applies, on `device`. After each,
// `after(kind, id, requested, size)` (a refused allocation or mapping is
// reported as Kind::refuse). Everything is freed at the end.
void workload(nuvec::Device& device, std::uint64_t seed, int operations,
              const std::function<void(Kind, std::uint64_t, std::uint64_t, std::uint64_t)>& after) {
  const std::size_t page = nuvec::page_size();
  const std::size_t sizes[] = {1, 100, 256, 1000, 4096, 5000, 70'000, 3 * page + 1, 1 * kMiB, 2 * kMiB + 1};
  nuvec_test::TempFile small(3 * page + 5, seed);
  nuvec_test::TempFile large(64 * page, seed + 1);
  struct Live {
    std::uint64_t id;
    nuvec::Buffer buffer;
  };
  struct LiveMapping {
    std::uint64_t id;
    nuvec::MappedFile mapping;
  };
  std::vector<Live> buffers;
  std::vector<LiveMapping> mappings;
  std::mt19937_64 rng(seed);
  std::uint64_t next_id = 1;
  const auto free_one = [&](std::size_t i) {
    const std::uint64_t id = buffers[i].id;
    buffers.erase(buffers.begin() + static_cast<std::ptrdiff_t>(i));
    after(Kind::free, id, 0, 0);
  };
  for (int n = 0; n < operations; ++n) {
    const std::uint64_t dice = rng() % 100;
    if (dice < 45 || buffers.empty()) {
      const std::size_t len = sizes[rng() % std::size(sizes)];
      try {
        buffers.push_back({next_id, device.new_buffer(len)});
        after(Kind::allocate, next_id++, len, len);
      } catch (const nuvec::OutOfMemory&) {
        after(Kind::refuse, 0, len, 0);
      }
    } else if (dice < 85) {
      free_one(rng() % buffers.size());
    } else if (dice < 88) {
      const nuvec_test::TempFile& file = rng() % 2 ? small : large;
      try {
        mappings.push_back({next_id, device.map_file(file.path())});
        after(Kind::map, next_id++, nuvec::mapping_size(file.size()), nuvec::mapping_size(file.size()));
      } catch (const nuvec::OutOfMemory&) {
        after(Kind::refuse, 0, nuvec::mapping_size(file.size()), 0);
      }
    } else if (dice < 91 && !mappings.empty()) {
      const std::uint64_t id = mappings.front().id;
      mappings.erase(mappings.begin());
      after(Kind::unmap, id, 0, 0);
    } else if (dice < 93) {
      const MemoryStats s = device.memory();
      const std::size_t limit = std::max<std::size_t>(s.active + s.mapped + 4 * kMiB, rng() % 2 ? 8 * kMiB : 0);
      device.set_memory_limit(rng() % 3 ? limit : nuvec::physical_memory());
      after(Kind::memory_limit, 0, device.memory().memory_limit, 0);
    } else if (dice < 95) {
      const std::size_t limit = rng() % 2 ? 64 * kKiB : 1024 * kMiB;
      device.set_cache_limit(limit);
      after(Kind::cache_limit, 0, limit, 0);
    } else if (dice < 96) {
      const std::size_t limit = rng() % 2 ? 64 * kKiB : 0;  // within the usual 8 MiB RLIMIT_MEMLOCK
      device.set_wired_limit(limit);
      after(Kind::wired_limit, 0, limit, 0);
    } else if (dice < 97) {
      device.reset_peak();
      after(Kind::reset_peak, 0, 0, 0);
    } else if (dice < 98) {
      device.clear_cache();
      after(Kind::clear_cache, 0, 0, 0);
    } else {
      device.mark("phase");
      after(Kind::mark, 0, 0, 0);
    }
  }
  while (!buffers.empty()) free_one(buffers.size() - 1);
  while (!mappings.empty()) {
    const std::uint64_t id = mappings.back().id;
    mappings.pop_back();
    after(Kind::unmap, id, 0, 0);
  }
}

// The workload's trace built by hand: each operation with memory() after it.
Trace trace_from_snapshots(std::uint64_t seed, int operations) {
  auto device = fresh_device();
  TraceBuilder b("nuvec");
  workload(*device, seed, operations, [&](Kind kind, std::uint64_t id, std::uint64_t requested, std::uint64_t size) {
    b.add(kind, id, requested, size, kind == Kind::mark ? "phase" : "", device->memory());
  });
  return b.trace();
}

std::uint64_t replayed_events(const Trace& trace) {
  return std::count_if(trace.events.begin(), trace.events.end(), [](const TraceEvent& e) {
    return e.kind != Kind::release && e.kind != Kind::wire && e.kind != Kind::unwire && e.kind != Kind::refuse;
  });
}

TEST(TraceReplay, VerifyReproducesStatisticsTakenAfterEachOperation) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(seed);
    const Trace trace = trace_from_snapshots(seed, 3000);
    auto device = fresh_device();
    ReplayOptions options;
    options.verify = true;
    const ReplayReport r = nuvec::replay(trace, *device, options);
    EXPECT_FALSE(r.mismatch.has_value()) << "seq " << r.mismatch->seq << ": " << r.mismatch->field << " expected "
                                         << r.mismatch->expected << ", got " << r.mismatch->got;
    EXPECT_EQ(r.verified, replayed_events(trace));
    EXPECT_EQ(r.final_stats, *trace.events.back().stats);
  }
}

TEST(TraceReplay, VerifyReportsTheFirstEventThatDiffers) {
  Trace trace = trace_from_snapshots(4, 500);
  std::size_t tampered = 0;
  for (std::size_t i = 100; i < trace.events.size(); ++i) {
    if (trace.events[i].kind == Kind::allocate) {
      tampered = i;
      break;
    }
  }
  ASSERT_NE(tampered, 0u);
  const std::uint64_t cache = trace.events[tampered].stats->cache;
  trace.events[tampered].stats->cache += 256;
  trace.events[tampered + 1].stats->wired += 1;  // later mismatches are not the first

  auto device = fresh_device();
  ReplayOptions options;
  options.verify = true;
  const ReplayReport r = nuvec::replay(trace, *device, options);
  ASSERT_TRUE(r.mismatch.has_value());
  EXPECT_EQ(r.mismatch->seq, trace.events[tampered].seq);
  EXPECT_EQ(r.mismatch->field, "cache");
  EXPECT_EQ(r.mismatch->expected, cache + 256);
  EXPECT_EQ(r.mismatch->got, cache);
  EXPECT_EQ(r.verified, replayed_events(trace)) << "the replay goes on to the end";
}

TEST(TraceReplay, VerifyReproducesWhatTheRecorderRecorded) {
  for (std::uint64_t seed = 11; seed <= 13; ++seed) {
    SCOPED_TRACE(seed);
    Trace recorded;
    {
      auto device = fresh_device();
      device->start_trace(1 << 20);
      workload(*device, seed, 3000, [](Kind, std::uint64_t, std::uint64_t, std::uint64_t) {});
      recorded = *device->trace();
    }
    ASSERT_EQ(recorded.header.dropped, 0u);
    const auto has = [&](Kind k) {
      return std::any_of(recorded.events.begin(), recorded.events.end(),
                         [k](const TraceEvent& e) { return e.kind == k; });
    };
    EXPECT_TRUE(has(Kind::release) && has(Kind::wire) && has(Kind::refuse) && has(Kind::map));

    // Through a file, as `nuvec replay --verify` reads it.
    nuvec_test::TempFile file(0, 0);
    nuvec::write_trace(file.path(), recorded);
    const Trace trace = nuvec::read_trace(file.path());
    // The format carries a label only for mark, map and refuse (the recorder
    // also names the file of an unmap; the file leaves that out).
    for (TraceEvent& e : recorded.events) {
      if (e.kind != Kind::mark && e.kind != Kind::map && e.kind != Kind::refuse) e.label.clear();
    }
    ASSERT_EQ(trace, recorded);

    auto device = fresh_device();
    ReplayOptions options;
    options.verify = true;
    const ReplayReport r = nuvec::replay(trace, *device, options);
    EXPECT_FALSE(r.mismatch.has_value()) << "seq " << r.mismatch->seq << ": " << r.mismatch->field << " expected "
                                         << r.mismatch->expected << ", got " << r.mismatch->got;
    EXPECT_EQ(r.verified, replayed_events(trace));
    EXPECT_EQ(r.final_stats, *trace.events.back().stats);
  }
}

TEST(TraceReplay, OnlyTheCpuDeviceReplaysForNow) {
  EXPECT_EQ(nuvec::replay_device("cpu")->name(), "cpu");
  try {
    nuvec::replay_device("cuda");
    FAIL();
  } catch (const nuvec::InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "only the CPU device")) << e.what();
  }
}

}  // namespace
