// The cost of Device::memory(), a consistent snapshot of every statistic
// (target: under 50 ns), on a device holding a few live and cached buffers.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "nuvec/device.h"

namespace nuvec::bench {
namespace {

void BM_memory_snapshot(benchmark::State& state) {
  static const std::unique_ptr<Device> device = Device::create_cpu();
  std::vector<Buffer> live;
  for (std::size_t n : {1000, 1 << 20, 3 << 20}) live.push_back(device->new_buffer(n));
  device->new_buffer(2 << 20).reset();  // one cached block

  for (auto _ : state) {
    MemoryStats stats = device->memory();
    benchmark::DoNotOptimize(stats);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_memory_snapshot)->Name("memory_snapshot/nuvec");

}  // namespace
}  // namespace nuvec::bench
