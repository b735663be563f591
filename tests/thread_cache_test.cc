// Thread caches (src/memory/thread_cache.h) keep every statistic exact:
// stress with cross-thread frees checked against the threads' own count at
// quiescent points, peaks that a thread cache's hit reaches, blocks of a
// thread's arena freed by another thread, the memory
// limit under contention, the cache limit, thread exit, and the trace's one
// order. Run it under ThreadSanitizer too (the tsan preset builds it).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/nuvec.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"
#include "support/text.h"

namespace {

using nuvec_test::invariant_violations;
using nuvec_test::TempFile;

using nuvec_test::kKiB;
using nuvec_test::kMiB;

std::unique_ptr<nuvec::Device> device_with_thread_caches(std::size_t max = nuvec::cpu::kThreadCacheMax) {
  nuvec::cpu::CpuBackendOptions options;
  options.thread_cache_max = max;
  return std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(nuvec::cpu::SystemCalls::real(), options),
                                         /*read_environment=*/false);
}

std::size_t rounded(std::size_t len) { return nuvec::allocation_size(len).value(); }

std::uint64_t stress_ops() {
  const char* text = std::getenv("NUVEC_THREAD_CACHE_OPS");
  return text && *text ? std::strtoull(text, nullptr, 0) : 1000000;
}

// Buffers handed between threads: whoever takes one frees it.
class Mailbox {
 public:
  void post(nuvec::Buffer b) {
    std::lock_guard lock(mutex_);
    if (box_.size() < 64) box_.push_back(std::move(b));
  }
  std::optional<nuvec::Buffer> take() {
    std::lock_guard lock(mutex_);
    if (box_.empty()) return std::nullopt;
    nuvec::Buffer b = std::move(box_.back());
    box_.pop_back();
    return b;
  }
  std::size_t live_bytes() {
    std::lock_guard lock(mutex_);
    std::size_t bytes = 0;
    for (const nuvec::Buffer& b : box_) bytes += rounded(b.size());
    return bytes;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    box_.clear();
  }

 private:
  std::mutex mutex_;
  std::vector<nuvec::Buffer> box_;
};

// 8 threads x NUVEC_THREAD_CACHE_OPS random allocations, frees (a third of
// them of buffers another thread allocated), maps and unmaps. Every
// snapshot is sound; at each of a few barriers, with every thread holding
// still, `active` and `mapped` are exactly what the threads hold, and the
// held memory (active + cache) is what it was before the round's last
// miss; at the end nothing is live and the cache is all that is held.
TEST(ThreadCache, EightThreadStressWithCrossThreadFreesIsExact) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 4;
  const std::size_t page = nuvec::page_size();
  TempFile file(5 * page + 3, 7);
  auto dev = device_with_thread_caches();
  const std::uint64_t ops = stress_ops() / kRounds;
  Mailbox mailbox;
  std::vector<std::size_t> held(kThreads, 0);  // each thread's live bytes (its own buffers)
  std::vector<std::size_t> mapped(kThreads, 0);
  std::vector<std::string> problems(kThreads);
  std::vector<std::vector<nuvec::Buffer>> buffers(kThreads);
  std::vector<std::vector<nuvec::MappedFile>> maps(kThreads);
  std::string quiescent_problem;
  std::barrier sync(kThreads, [&]() noexcept {
    std::size_t live = mailbox.live_bytes();
    std::size_t live_mapped = 0;
    for (int t = 0; t < kThreads; ++t) live += held[t], live_mapped += mapped[t];
    const nuvec::MemoryStats s = dev->memory();
    if (s.active != live || s.mapped != live_mapped || !invariant_violations(s).empty()) {
      quiescent_problem += fmt::format("at a barrier: threads hold {} B live, {} B mapped; device says {}\n", live,
                                       live_mapped, s);
    }
  });

  auto worker = [&](int id) {
    std::mt19937_64 rng(77 + id);
    auto uniform = [&](std::size_t lo, std::size_t hi) { return std::uniform_int_distribution<std::size_t>(lo, hi)(rng); };
    for (int round = 0; round < kRounds; ++round) {
      for (std::uint64_t op = 0; op < ops && problems[id].empty(); ++op) {
        const std::size_t r = uniform(0, 999);
        std::vector<nuvec::Buffer>& mine = buffers[id];
        if (r < 420) {
          if (mine.size() >= 24) continue;
          const std::size_t len = uniform(0, 15) == 0 ? uniform(300 * kKiB, 2 * kMiB) : uniform(1, 64 * kKiB);
          nuvec::Buffer b = dev->new_buffer(len);
          b.data()[0] = static_cast<std::byte>(id);
          b.data()[len - 1] = static_cast<std::byte>(id);
          held[id] += rounded(len);
          mine.push_back(std::move(b));
        } else if (r < 700) {
          if (mine.empty()) continue;
          const std::size_t i = uniform(0, mine.size() - 1);
          if (mine[i].data()[0] != static_cast<std::byte>(id) ||
              mine[i].data()[mine[i].size() - 1] != static_cast<std::byte>(id)) {
            problems[id] = "a buffer was overwritten: one block had two owners";
          }
          held[id] -= rounded(mine[i].size());
          std::swap(mine[i], mine.back());
          mine.pop_back();
        } else if (r < 850) {
          // Cross-thread: hand one over (it leaves this thread's count),
          // or free one another thread allocated.
          if (uniform(0, 1) == 0 && !mine.empty()) {
            held[id] -= rounded(mine.back().size());
            mailbox.post(std::move(mine.back()));
            mine.pop_back();
          } else {
            mailbox.take();  // freed here, by whoever took it
          }
        } else if (r < 900) {
          const nuvec::MemoryStats s = dev->memory();
          if (const std::string broken = invariant_violations(s); !broken.empty()) {
            problems[id] = broken + " in " + fmt::format("{}", s);
          }
        } else if (r < 930) {
          if (maps[id].size() >= 2) continue;
          maps[id].push_back(dev->map_file(file.path()));
          mapped[id] += nuvec::mapping_size(file.size());
        } else if (r < 960) {
          if (maps[id].empty()) continue;
          maps[id].pop_back();
          mapped[id] -= nuvec::mapping_size(file.size());
        }
      }
      sync.arrive_and_wait();
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(problems[t], "") << "thread " << t;
  EXPECT_EQ(quiescent_problem, "");

  buffers.clear();
  maps.clear();
  mailbox.clear();
  const nuvec::MemoryStats end = dev->memory();
  EXPECT_EQ(end.active, 0u) << end;
  EXPECT_EQ(end.mapped, 0u) << end;
  EXPECT_EQ(invariant_violations(end), "") << end;
  EXPECT_GT(end.cache, 0u) << end;
  dev->clear_cache();
  EXPECT_EQ(dev->memory().cache, 0u);
}

// A block one thread freed into its cache, handed out again while another
// thread holds a new block: the peak counts both; and before that, the
// block in the cache counted in no peak.
TEST(ThreadCache, PeakCountsWhatAThreadCacheHandsOutAgain) {
  auto dev = device_with_thread_caches();
  const std::size_t x = 64 * kKiB, y = 96 * kKiB;
  std::barrier step(2);
  std::thread a([&] {
    dev->new_buffer(x).reset();  // now in a's thread cache
    step.arrive_and_wait();      // b allocates y
    step.arrive_and_wait();
    nuvec::Buffer again = dev->new_buffer(x);  // a's cache serves: x + y live
    step.arrive_and_wait();
    step.arrive_and_wait();
  });
  std::thread b([&] {
    step.arrive_and_wait();
    nuvec::Buffer held = dev->new_buffer(y);
    const nuvec::MemoryStats cached = dev->memory();
    EXPECT_EQ(cached.active, y) << cached;
    EXPECT_EQ(cached.peak, y) << cached;  // y > x: x's block is cache, not live
    EXPECT_EQ(cached.cache, x) << cached;
    step.arrive_and_wait();
    step.arrive_and_wait();  // a holds x again
    const nuvec::MemoryStats s = dev->memory();
    EXPECT_EQ(s.active, x + y) << s;
    EXPECT_EQ(s.peak, x + y) << s;
    EXPECT_EQ(s.peak_with_mapped, x + y) << s;
    step.arrive_and_wait();
  });
  a.join();
  b.join();
  const nuvec::MemoryStats s = dev->memory();
  EXPECT_EQ(s.active, 0u);
  EXPECT_EQ(s.peak, x + y);
  EXPECT_EQ(s.cache, x + y) << s;
  dev->reset_peak();
  EXPECT_EQ(dev->memory().peak, 0u);
}

// Blocks of sizes the stacks do not keep come from the allocating thread's
// own arena. Freed by another thread, they go home (at once, or from that
// thread's slots when it exits), every statistic exact at each step; the
// allocating thread then reuses them with no new system allocation, and the
// peak counts exactly what is live together.
TEST(ThreadCache, ArenaBlocksFreedElsewhereGoHome) {
  auto dev = device_with_thread_caches();
  std::vector<std::size_t> sizes;
  std::size_t total = 0;
  for (std::size_t i = 0; i < 40; ++i) {
    sizes.push_back(300 * kKiB + i * 12 * kKiB + 100);  // above the stacks' 256 KiB, all different
    total += rounded(sizes.back());
  }
  std::vector<nuvec::Buffer> handed;
  std::barrier step(2);
  std::thread a([&] {
    for (std::size_t len : sizes) handed.push_back(dev->new_buffer(len));
    step.arrive_and_wait();  // another thread frees them and exits
    step.arrive_and_wait();
    std::vector<nuvec::Buffer> again;
    for (std::size_t len : sizes) again.push_back(dev->new_buffer(len));
    step.arrive_and_wait();  // checked while live
    step.arrive_and_wait();
  });
  step.arrive_and_wait();
  const nuvec::MemoryStats live = dev->memory();
  EXPECT_EQ(live.active, total) << live;
  EXPECT_EQ(live.peak, total) << live;
  std::thread([&] {
    handed.clear();
    const nuvec::MemoryStats s = dev->memory();
    EXPECT_EQ(s.active, 0u) << s;
    EXPECT_EQ(s.cache, live.cache + total) << s;
  }).join();
  const nuvec::MemoryStats freed = dev->memory();
  EXPECT_EQ(freed.active, 0u) << freed;
  EXPECT_EQ(freed.cache, live.cache + total) << freed;
  EXPECT_EQ(invariant_violations(freed), "") << freed;
  step.arrive_and_wait();
  step.arrive_and_wait();
  const nuvec::MemoryStats again = dev->memory();
  EXPECT_EQ(again.active, total) << again;
  EXPECT_EQ(again.peak, total) << again;
  EXPECT_EQ(again.cache, live.cache) << again;
  EXPECT_EQ(again.system_allocations, freed.system_allocations) << "the arena's blocks did not come home";
  {
    nuvec::Buffer beside = dev->new_buffer(kMiB + 1);
    const nuvec::MemoryStats both = dev->memory();
    EXPECT_EQ(both.active, total + rounded(kMiB + 1)) << both;
    EXPECT_EQ(both.peak, total + rounded(kMiB + 1)) << both;
    EXPECT_EQ(invariant_violations(both), "") << both;
  }
  step.arrive_and_wait();
  a.join();
  const nuvec::MemoryStats end = dev->memory();
  EXPECT_EQ(end.active, 0u) << end;
  EXPECT_EQ(invariant_violations(end), "") << end;
}

// Blocks held in thread caches never make the limit refuse what live bytes
// allow: an allocation up to the limit exactly succeeds.
TEST(ThreadCache, CachedBlocksDoNotNarrowTheLimit) {
  auto dev = device_with_thread_caches();
  dev->set_memory_limit(8 * kMiB);
  {
    std::vector<nuvec::Buffer> small;
    for (int i = 0; i < 64; ++i) small.push_back(dev->new_buffer(16 * kKiB));
  }  // 1 MiB in this thread's cache
  const nuvec::MemoryStats before = dev->memory();
  EXPECT_EQ(before.active, 0u);
  EXPECT_EQ(before.cache, kMiB) << before;
  nuvec::Buffer all = dev->new_buffer(8 * kMiB);  // the cache yields
  EXPECT_THROW(dev->new_buffer(1), nuvec::OutOfMemory);
  const nuvec::MemoryStats s = dev->memory();
  EXPECT_EQ(s.active, 8 * kMiB) << s;
  EXPECT_EQ(invariant_violations(s), "") << s;
}

// The cache yields only the excess, from a thread's arena too: its blocks
// merge there, and the yield cuts the merged extent.
TEST(ThreadCache, MemoryLimitYieldsOnlyTheExcessOfAThreadsArena) {
  auto dev = device_with_thread_caches();
  {
    std::vector<nuvec::Buffer> small;
    for (int i = 0; i < 64; ++i) small.push_back(dev->new_buffer(16 * kKiB));
  }  // 1 MiB in this thread's cache
  ASSERT_EQ(dev->memory().cache, kMiB);
  dev->set_memory_limit(kMiB / 2);
  const nuvec::MemoryStats s = dev->memory();
  EXPECT_EQ(s.cache, kMiB / 2) << s;
  EXPECT_EQ(invariant_violations(s), "") << s;
}

// A thread's share of the cache limit is all or nothing: below two shares
// (512 MiB at the default line) a thread gets none, and its arena keeps
// nothing, however far the limit is from what it holds. (A device without
// thread caches keeps the limit's worth: DeviceContract's trims.)
TEST(ThreadCache, ACacheLimitBelowTwoSharesLeavesAThreadNothing) {
  auto dev = device_with_thread_caches();
  {
    std::vector<nuvec::Buffer> small;
    for (int i = 0; i < 64; ++i) small.push_back(dev->new_buffer(16 * kKiB));
  }
  ASSERT_EQ(dev->memory().cache, kMiB);
  dev->set_cache_limit(kMiB / 2);
  EXPECT_EQ(dev->memory().cache, 0u);
  dev->new_buffer(16 * kKiB).reset();
  EXPECT_EQ(dev->memory().cache, 0u) << "nor does a later free";
  const nuvec::MemoryStats s = dev->memory();
  EXPECT_EQ(invariant_violations(s), "") << s;
}

// N threads race toward the memory limit: no snapshot and no refusal's
// statistics pass it, what the threads hold never passes it, every refusal
// leaves a sound state, and after all frees nothing is live.
TEST(ThreadCache, LimitHoldsUnderContention) {
  constexpr int kThreads = 8;
  const std::size_t limit = 6 * kMiB;
  auto dev = device_with_thread_caches();
  dev->set_memory_limit(limit);
  std::atomic<std::size_t> held_total{0};
  std::atomic<std::uint64_t> refusals{0};
  std::vector<std::string> problems(kThreads);
  auto worker = [&](int id) {
    std::mt19937_64 rng(5 + id);
    std::vector<nuvec::Buffer> mine;
    for (int op = 0; op < 20000 && problems[id].empty(); ++op) {
      if (std::uniform_int_distribution<int>(0, 2)(rng) == 0 && !mine.empty()) {
        held_total -= rounded(mine.back().size());
        mine.pop_back();
        continue;
      }
      const std::size_t len = std::uniform_int_distribution<std::size_t>(1, 200 * kKiB)(rng);
      try {
        mine.push_back(dev->new_buffer(len));
        if (held_total += rounded(len); held_total.load() > limit) {
          problems[id] = fmt::format("threads hold {} B, past the limit", held_total.load());
        }
      } catch (const nuvec::OutOfMemory& e) {
        ++refusals;
        if (const std::string broken = invariant_violations(e.stats()); !broken.empty()) {
          problems[id] = "a refusal's statistics: " + broken;
        }
        const nuvec::MemoryStats s = dev->memory();
        if (const std::string broken = invariant_violations(s); !broken.empty()) problems[id] = broken;
      }
    }
    for (const nuvec::Buffer& b : mine) held_total -= rounded(b.size());
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(problems[t], "") << "thread " << t;
  EXPECT_GT(refusals.load(), 0u) << "the threads never reached the limit";
  const nuvec::MemoryStats end = dev->memory();
  EXPECT_EQ(end.active, 0u) << end;
  EXPECT_LE(end.peak, limit) << end;
  EXPECT_EQ(invariant_violations(end), "") << end;
}

// A thread that exits with a full cache gives its blocks to the shared
// cache: `cache` stays what it was, and the blocks serve the next request.
TEST(ThreadCache, ThreadExitReturnsItsBlocks) {
  auto dev = device_with_thread_caches();
  std::thread([&] {
    std::vector<nuvec::Buffer> live;
    for (int i = 0; i < 8; ++i) live.push_back(dev->new_buffer(32 * kKiB));
  }).join();
  const nuvec::MemoryStats after = dev->memory();
  EXPECT_EQ(after.active, 0u);
  EXPECT_EQ(after.cache, 8 * 32 * kKiB) << after;
  // The shared cache serves them now: no miss.
  std::vector<nuvec::Buffer> again;
  for (int i = 0; i < 8; ++i) again.push_back(dev->new_buffer(32 * kKiB));
  EXPECT_EQ(dev->memory().system_allocations, after.system_allocations);
  again.clear();
  EXPECT_EQ(dev->memory().cache, 8 * 32 * kKiB);
}

// Threads that exit while another thread frees the buffers they allocated
// (racing their caches' return): every buffer is freed once, nothing is
// lost, and the counts end exact. (A freed thread cache that a freeing
// thread still points at would show here under AddressSanitizer.)
TEST(ThreadCache, FreesRaceTheAllocatingThreadsExit) {
  auto dev = device_with_thread_caches();
  Mailbox mailbox;
  std::atomic<bool> done{false};
  std::thread freer([&] {
    while (!done.load() || mailbox.live_bytes() != 0) mailbox.take();
  });
  for (int wave = 0; wave < 25; ++wave) {
    std::vector<std::thread> short_lived;
    for (int t = 0; t < 8; ++t) {
      short_lived.emplace_back([&, t] {
        for (int i = 0; i < 8; ++i) mailbox.post(dev->new_buffer(static_cast<std::size_t>(t + i + 1) * 4 * kKiB));
      });
    }
    for (std::thread& t : short_lived) t.join();
  }
  done = true;
  freer.join();
  const nuvec::MemoryStats s = dev->memory();
  EXPECT_EQ(s.active, 0u) << s;
  EXPECT_EQ(invariant_violations(s), "") << s;
  dev->clear_cache();
  EXPECT_EQ(dev->memory().cache, 0u);
}

// The cache limit counts what thread caches hold: with a small limit they
// get no share, and no snapshot shows the cache past it.
TEST(ThreadCache, CacheLimitCountsThreadCaches) {
  auto dev = device_with_thread_caches();
  dev->set_cache_limit(3 * kMiB);
  std::atomic<bool> broken{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        std::vector<nuvec::Buffer> live;
        for (int j = 0; j < 8; ++j) live.push_back(dev->new_buffer(static_cast<std::size_t>(j + 1) * 16 * kKiB));
        live.clear();
        const nuvec::MemoryStats s = dev->memory();
        if (s.cache > s.cache_limit) broken = true;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(broken.load());
  EXPECT_LE(dev->memory().cache, 3 * kMiB);
}

// Buffers a thread cache handed out (or the shared cache, for a thread
// cache's size) are wired when the wired limit is raised later, like every
// live buffer, whichever thread holds them.
TEST(ThreadCache, RaisingTheWiredLimitWiresTheirLiveBuffers) {
  auto dev = device_with_thread_caches();
  dev->new_buffer(64 * kKiB).reset();  // into this thread's cache
  nuvec::Buffer from_cache = dev->new_buffer(64 * kKiB);
  nuvec::Buffer from_shared = dev->new_buffer(8 * kKiB);
  nuvec::Buffer other;
  std::thread([&] { other = dev->new_buffer(16 * kKiB); }).join();  // its thread is gone
  dev->set_wired_limit(kMiB);
  const nuvec::MemoryStats s = dev->memory();
  EXPECT_EQ(s.wired, (64 + 8 + 16) * kKiB) << s;
  EXPECT_EQ(invariant_violations(s), "") << s;
  from_cache.reset();
  other.reset();
  from_shared.reset();
  dev->set_wired_limit(0);
  EXPECT_EQ(dev->memory().wired, 0u);
  EXPECT_EQ(dev->memory().active, 0u);
}

// A traced device records every event in one order with the statistics
// right after it: each allocate raises active by its size, each free lowers
// it, whichever thread it came from.
TEST(ThreadCache, TraceIsOneOrder) {
  auto dev = device_with_thread_caches();
  {
    std::vector<nuvec::Buffer> warm;  // fills this thread's cache before tracing
    for (int i = 0; i < 4; ++i) warm.push_back(dev->new_buffer(8 * kKiB));
  }
  dev->start_trace();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        nuvec::Buffer b = dev->new_buffer(static_cast<std::size_t>(t + 1) * 4 * kKiB);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::optional<nuvec::Trace> trace = dev->trace();
  ASSERT_TRUE(trace.has_value());
  std::uint64_t active = dev->memory().active;  // 0 now, and at the start
  ASSERT_EQ(active, 0u);
  std::size_t allocations = 0;
  for (std::size_t i = 0; i < trace->events.size(); ++i) {
    const nuvec::TraceEvent& e = trace->events[i];
    if (i > 0) {
      ASSERT_EQ(e.seq, trace->events[i - 1].seq + 1);
    }
    ASSERT_TRUE(e.stats.has_value());
    if (e.kind == nuvec::TraceEventKind::allocate) {
      active += e.size;
      ++allocations;
    } else if (e.kind == nuvec::TraceEventKind::free) {
      active -= e.size;
    }
    ASSERT_EQ(e.stats->active, active) << "event " << e.seq;
  }
  EXPECT_EQ(allocations, 2000u);
}

}  // namespace
