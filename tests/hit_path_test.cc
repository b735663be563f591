// A cache hit makes no system call and allocates no bookkeeping: this file
// replaces the global operator new to count every heap allocation the
// library makes, and counts system calls through the SystemCalls seam.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <tuple>
#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/nuvec.h"
#include "support/counting_system_calls.h"

namespace {
std::atomic<std::size_t> g_heap_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  g_heap_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

using nuvec_test::CountingSystemCalls;

std::size_t system_calls(const CountingSystemCalls& calls) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < CountingSystemCalls::kCalls; ++i) {
    total += calls.calls(static_cast<CountingSystemCalls::Call>(i));
  }
  return total;
}

// (wired limit, largest block cached per thread): thread caches serve while
// nothing is wired; the shared cache serves the rest.
class HitPath : public ::testing::TestWithParam<std::tuple<std::size_t, std::size_t>> {};

TEST_P(HitPath, SteadyStateLoopMakesNoSystemCallAndNoHeapAllocation) {
  auto calls = std::make_shared<CountingSystemCalls>();
  nuvec::cpu::CpuBackendOptions options;
  options.thread_cache_max = std::get<1>(GetParam());
  nuvec::Device device(nuvec::cpu::make_backend(calls, options), /*read_environment=*/false);
  device.set_wired_limit(std::get<0>(GetParam()));
  const std::size_t page = nuvec::page_size();
  const std::vector<std::size_t> sizes = {100, 1000, page - 1, page, 3 * page + 5, 256 * page, 2 * page};
  std::vector<nuvec::Buffer> live;
  live.reserve(sizes.size());
  const auto round = [&] {
    for (std::size_t len : sizes) live.push_back(device.new_buffer(len));
    live.clear();
  };
  round();  // the first round fills the cache
  const nuvec::MemoryStats warm = device.memory();
  const std::size_t heap_before = g_heap_allocations.load();
  const std::size_t calls_before = system_calls(*calls);

  for (int i = 0; i < 1000; ++i) round();

  EXPECT_EQ(g_heap_allocations.load(), heap_before) << "a hit or a free allocated bookkeeping";
  EXPECT_EQ(system_calls(*calls), calls_before) << "a hit or a free made a system call";
  EXPECT_EQ(device.memory(), warm);
}

// Without wiring, and with every block wired (a wired block stays wired in
// the cache, so its reuse needs no mlock either).
INSTANTIATE_TEST_SUITE_P(WiredLimits, HitPath,
                         ::testing::Combine(::testing::Values(std::size_t{0}, std::size_t{4} << 20),
                                            ::testing::Values(std::size_t{0}, nuvec::cpu::kThreadCacheMax)));

}  // namespace
