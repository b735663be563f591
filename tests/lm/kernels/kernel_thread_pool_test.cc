// The kernels' thread pool: every index runs exactly once, slots are exclusive,
// nesting and concurrent callers run serially instead of deadlocking, and
// exceptions reach the caller.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "lm/kernels/thread_pool.h"

namespace nuvec::lm::kernels {
namespace {

// Restores the thread count a test changed.
class KernelThreadPool : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = threads(); }
  void TearDown() override { set_threads(saved_); }
  int saved_ = 1;
};

// The default is the number of CPUs in this process's affinity mask (under
// `taskset -c 0` it is 1, whatever the machine has). Runs before any test here
// changes the count (each restores it).
TEST_F(KernelThreadPool, DefaultsToTheCpusThisProcessMayUse) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(threads(), CPU_COUNT(&set));
}

TEST_F(KernelThreadPool, RunsEveryIndexExactlyOnce) {
  for (int n : {1, 2, 3, 5}) {
    set_threads(n);
    EXPECT_EQ(threads(), n);
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{1000}}) {
      std::vector<std::atomic<int>> runs(count);
      parallel_for(count, [&](std::size_t i) { runs[i].fetch_add(1, std::memory_order_relaxed); });
      for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(runs[i].load(), 1) << "threads " << n << " index " << i;
    }
  }
}

// Back-to-back tiny loops: workers often arrive after the caller has done
// every index and closed the loop; they must skip it, not run it late.
TEST_F(KernelThreadPool, ManyTinyLoopsInARow) {
  set_threads(3);
  for (int round = 0; round < 20000; ++round) {
    std::atomic<int> runs{0};
    parallel_for(2, [&](std::size_t) { runs.fetch_add(1, std::memory_order_relaxed); });
    ASSERT_EQ(runs.load(), 2) << "round " << round;
  }
}

TEST_F(KernelThreadPool, SetThreadsBelowOneMeansOne) {
  set_threads(0);
  EXPECT_EQ(threads(), 1);
  set_threads(-4);
  EXPECT_EQ(threads(), 1);
}

TEST_F(KernelThreadPool, SlotsAreInRangeAndNeverShared) {
  set_threads(4);
  std::vector<std::atomic<int>> busy(4);
  std::atomic<bool> overlap{false}, out_of_range{false};
  for (int round = 0; round < 50; ++round)
    parallel_for(64, [&](std::size_t, int slot) {
      if (slot < 0 || slot >= 4) {
        out_of_range = true;
        return;
      }
      if (busy[slot].fetch_add(1) != 0) overlap = true;
      std::this_thread::yield();  // hold the slot a moment
      busy[slot].fetch_sub(1);
    });
  EXPECT_FALSE(out_of_range);
  EXPECT_FALSE(overlap);
}

TEST_F(KernelThreadPool, PerSlotScratchSumsWithoutRaces) {
  set_threads(3);
  std::vector<long> per_slot(3, 0);  // plain longs: TSan would see a shared slot
  parallel_for(10000, [&](std::size_t i, int slot) { per_slot[slot] += static_cast<long>(i); });
  EXPECT_EQ(per_slot[0] + per_slot[1] + per_slot[2], 10000L * 9999 / 2);
}

TEST_F(KernelThreadPool, NestedLoopsRunSeriallyOnTheCallingThread) {
  set_threads(2);
  std::atomic<int> inner{0};
  parallel_for(4, [&](std::size_t) {
    const auto outer_thread = std::this_thread::get_id();
    parallel_for(5, [&](std::size_t, int slot) {
      EXPECT_EQ(slot, 0);
      EXPECT_EQ(std::this_thread::get_id(), outer_thread);
      inner.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 20);
}

TEST_F(KernelThreadPool, ConcurrentCallersEachGetEveryIndex) {
  set_threads(2);
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 100; ++round) {
        std::atomic<int> mine{0};
        parallel_for(17, [&](std::size_t) { mine.fetch_add(1); });
        EXPECT_EQ(mine.load(), 17);
      }
    });
  for (auto& t : callers) t.join();
}

// Each index but the throwing one takes 20 us, so the whole loop would take
// about 2 s on the other thread; the throw (slow to unwind under ASan, a few
// ms) must stop it long before that. With trivial bodies the other thread
// could finish every index while the exception is still unwinding.
TEST_F(KernelThreadPool, RethrowsTheFirstExceptionAndStartsNothingMore) {
  set_threads(2);
  constexpr int kCount = 100000;
  std::atomic<int> started{0};
  EXPECT_THROW(parallel_for(kCount,
                            [&](std::size_t i) {
                              started.fetch_add(1);
                              if (i == 3) throw std::runtime_error("index 3");
                              std::this_thread::sleep_for(std::chrono::microseconds(20));
                            }),
               std::runtime_error);
  EXPECT_LT(started.load(), kCount / 2);
  // The pool still works afterwards.
  std::atomic<int> runs{0};
  parallel_for(10, [&](std::size_t) { runs.fetch_add(1); });
  EXPECT_EQ(runs.load(), 10);
}

// After a pause longer than the spin the worker sleeps; the next loop must
// wake it. Each of the loop's two indices waits for the other to start, so
// they only both start if two threads run them at once (the caller alone
// would wait out the timeout on the first).
TEST_F(KernelThreadPool, WorkersSleepAndWakeForLaterLoops) {
  set_threads(2);
  const auto both_at_once = [] {
    std::atomic<int> started{0};
    std::atomic<bool> together{true};
    parallel_for(2, [&](std::size_t) {
      started.fetch_add(1);
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (started.load() < 2) {
        if (std::chrono::steady_clock::now() > give_up) {
          together = false;
          return;
        }
        std::this_thread::yield();
      }
    });
    return together.load();
  };
  EXPECT_TRUE(both_at_once()) << "the first loop ran on one thread";
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin: the worker sleeps
  EXPECT_TRUE(both_at_once()) << "the worker did not wake for the loop after its sleep";
}

}  // namespace
}  // namespace nuvec::lm::kernels
