// The cost of Device::memory(), a consistent snapshot of every statistic
// (target: under 50 ns), on a device holding a few live and cached buffers.
// With thread caches it takes each one's lock as well (docs/allocator-policy.md,
// "Thread caches"): `thread_caches:N` measures it with N other threads'
// caches attached (those threads idle, so their locks are uncontended; a
// thread in the middle of a hit makes memory() wait for it).
#include <benchmark/benchmark.h>

#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "nuvec/device.h"

namespace nuvec::bench {
namespace {

void BM_memory_snapshot(benchmark::State& state) {
  static const std::unique_ptr<Device> device = Device::create_cpu();
  std::vector<Buffer> live;
  for (std::size_t n : {1000, 1 << 20, 3 << 20}) live.push_back(device->new_buffer(n));
  device->new_buffer(2 << 20).reset();  // one cached block

  const auto others = static_cast<std::ptrdiff_t>(state.range(0));
  std::latch attached(others), done(1);
  std::vector<std::jthread> threads;
  for (std::ptrdiff_t t = 0; t < others; ++t) {
    threads.emplace_back([&] {
      device->new_buffer(4096).reset();  // attaches this thread's cache, one block in it
      attached.count_down();
      done.wait();
    });
  }
  attached.wait();

  for (auto _ : state) {
    MemoryStats stats = device->memory();
    benchmark::DoNotOptimize(stats);
  }
  done.count_down();
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_memory_snapshot)->Name("memory_snapshot/nuvec/thread_caches")->Arg(0)->Arg(1)->Arg(15);

}  // namespace
}  // namespace nuvec::bench
