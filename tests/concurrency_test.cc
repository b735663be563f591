// Eight threads on one device: mixed allocations and frees, mappings of a
// shared file, snapshots, peak resets and limit changes. Every snapshot must
// be internally consistent, no block may be handed to two owners, and at the
// end nothing is live. Run it under ThreadSanitizer (the tsan preset).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
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

using nuvec_test::TempFile;

using nuvec_test::kMiB;
constexpr int kThreads = 8;

std::uint64_t ops_per_thread() {
  const char* text = std::getenv("NUVEC_CONCURRENCY_OPS");
  return text && *text ? std::strtoull(text, nullptr, 0) : 100000;
}

struct Counters {
  std::atomic<std::uint64_t> allocations{0}, refusals{0}, maps{0}, snapshots{0};
};

// One thread's share of the work; returns the first problem found, if any.
std::string worker(nuvec::Device& dev, const TempFile& file, int id, std::uint64_t ops,
                   Counters& counters) {
  const std::size_t page = nuvec::page_size();
  std::mt19937_64 rng(1000 + id);
  auto uniform = [&](std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
  };
  const auto tag = static_cast<std::byte>(id + 1);
  std::vector<nuvec::Buffer> buffers;
  std::vector<nuvec::MappedFile> maps;
  auto check_snapshot = [&]() -> std::string {
    const nuvec::MemoryStats s = dev.memory();
    counters.snapshots.fetch_add(1, std::memory_order_relaxed);
    const std::string broken = nuvec_test::invariant_violations(s);
    if (!broken.empty()) return broken + " in " + fmt::format("{}", s);
    return {};
  };

  for (std::uint64_t op = 0; op < ops; ++op) {
    const std::size_t r = uniform(0, 999);
    if (r < 400) {
      if (buffers.size() >= 32) continue;
      const std::size_t len = uniform(0, 3) == 0 ? uniform(page + 1, 16 * page) : uniform(1, page);
      try {
        nuvec::Buffer b = dev.new_buffer(len);
        counters.allocations.fetch_add(1, std::memory_order_relaxed);
        if (b.size() != len || b.capacity() < len) return "wrong buffer size";
        b.data()[0] = tag;
        b.data()[len - 1] = tag;
        buffers.push_back(std::move(b));
      } catch (const nuvec::OutOfMemory&) {
        counters.refusals.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (r < 780) {
      if (buffers.empty()) continue;
      const std::size_t i = uniform(0, buffers.size() - 1);
      const nuvec::Buffer& b = buffers[i];
      if (b.data()[0] != tag || b.data()[b.size() - 1] != tag) {
        return "a buffer was overwritten: one block had two owners";
      }
      std::swap(buffers[i], buffers.back());
      buffers.pop_back();
    } else if (r < 880) {
      if (std::string broken = check_snapshot(); !broken.empty()) return broken;
    } else if (r < 905) {
      if (maps.size() >= 2) continue;
      try {
        if (uniform(0, 1) == 0) {
          maps.push_back(dev.map_file(file.path()));
          if (std::memcmp(maps.back().bytes().data(), file.contents().data(), file.size()) != 0) {
            return "mapped bytes differ from the file";
          }
        } else {
          const std::vector<nuvec::FileRange> ranges = {{page + 7, 100}};
          maps.push_back(dev.map_ranges(file.path(), ranges));
          if (std::memcmp(maps.back().range(page + 7, 100).data(),
                          file.contents().data() + page + 7, 100) != 0) {
            return "mapped range differs from the file";
          }
        }
        counters.maps.fetch_add(1, std::memory_order_relaxed);
      } catch (const nuvec::OutOfMemory&) {
        counters.refusals.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (r < 930) {
      if (!maps.empty()) maps.erase(maps.begin() + static_cast<std::ptrdiff_t>(uniform(0, maps.size() - 1)));
    } else if (r < 950) {
      dev.reset_peak();
    } else if (r < 970) {
      dev.set_cache_limit(uniform(0, 4) == 0 ? 0 : uniform(0, 32 * kMiB));
    } else if (r < 985) {
      dev.set_wired_limit(uniform(0, 2) == 0 ? 0 : uniform(0, kMiB));
    } else if (r < 990) {
      dev.clear_cache();
    } else {
      if (std::string broken = check_snapshot(); !broken.empty()) return broken;
    }
  }
  for (const nuvec::Buffer& b : buffers) {
    if (b.data()[0] != tag || b.data()[b.size() - 1] != tag) return "a buffer was overwritten";
  }
  return {};
}

// The shared cache alone, and with thread caches in front (as Device::cpu()):
// their hits and frees run beside every other operation here.
class Concurrency : public ::testing::TestWithParam<std::size_t /*thread_cache_max*/> {};

TEST_P(Concurrency, EightThreadsOnOneDevice) {
  const std::size_t page = nuvec::page_size();
  TempFile file(3 * page + 17, 42);
  nuvec::cpu::CpuBackendOptions options;
  options.thread_cache_max = GetParam();
  nuvec::Device dev(nuvec::cpu::make_backend(nuvec::cpu::SystemCalls::real(), options), false);
  dev.set_memory_limit(kMiB + kMiB / 2);  // 8 x 32 buffers of up to 64 KiB: refusals happen
  const std::uint64_t ops = ops_per_thread();
  Counters counters;
  std::vector<std::string> problems(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { problems[t] = worker(dev, file, t, ops, counters); });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(problems[t], "") << "thread " << t;

  const nuvec::MemoryStats end = dev.memory();
  EXPECT_EQ(end.active, 0u) << end;
  EXPECT_EQ(end.mapped, 0u) << end;
  EXPECT_EQ(end.wired_mapped, 0u) << end;
  EXPECT_EQ(end.active_with_mapped, 0u) << end;
  EXPECT_EQ(nuvec_test::invariant_violations(end), "") << end;
  EXPECT_GT(end.system_allocations, 0u);
  EXPECT_GT(end.peak_with_mapped, 0u);
  dev.clear_cache();
  EXPECT_EQ(dev.memory().cache, 0u);
  EXPECT_EQ(dev.memory().wired, 0u);
  dev.reset_peak();
  EXPECT_EQ(dev.memory().peak, 0u);
  EXPECT_EQ(dev.memory().peak_with_mapped, 0u);

  EXPECT_GT(counters.allocations.load(), ops);
  EXPECT_GT(counters.maps.load(), 0u);
  std::printf("%llu allocations, %llu refusals, %llu mappings, %llu snapshots\n",
              static_cast<unsigned long long>(counters.allocations.load()),
              static_cast<unsigned long long>(counters.refusals.load()),
              static_cast<unsigned long long>(counters.maps.load()),
              static_cast<unsigned long long>(counters.snapshots.load()));
}

INSTANTIATE_TEST_SUITE_P(ThreadCaches, Concurrency,
                         ::testing::Values(std::size_t{0}, nuvec::cpu::kThreadCacheMax));

}  // namespace
