// Allocate+free pairs on a steady-state trace: nuvec against glibc malloc/free,
// in the same binary and run, on the identical trace (size_trace.h).
//
// Each benchmark thread keeps kWindow buffers live in a ring; one iteration
// frees the oldest and allocates the next size of the trace in its slot (one
// pair). Thread t starts t * kTraceLength / threads into the trace. Nothing
// touches the memory: this is the allocator's own cost, the same for both.
//
// nuvec: all threads share ONE device, as real users share Device::cpu(). Its
// cache is warmed (Setup, then one untimed cycle per thread) so that the timed
// loop is served by the cache; the `misses` counter reports the device's new
// system allocations during the timed loop, which on the CPU are arena
// reservations (0 in steady state), not the arena's misses (`nuvec replay`
// counts those). The arena keeps the warm cache compact (about 63 MiB after the
// warm-up for 1 thread; bench/results/2026-11-30-alloc-pair-arena.md), so
// nearly every pair splits a cached extent and merges the freed block with a
// neighbour.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "nuvec/device.h"
#include "size_trace.h"

namespace nuvec::bench {
namespace {

// glibc malloc/free, the baseline.
struct Glibc {
  using Handle = void*;
  static Handle allocate(std::size_t n) { return std::malloc(n); }
  static void release(Handle& p) {
    std::free(p);
    p = nullptr;
  }
  static const void* address(const Handle& p) { return p; }
  static std::uint64_t system_allocations() { return 0; }
};

// nuvec, through the public API; one device shared by all threads.
struct Nuvec {
  using Handle = Buffer;
  static Device& device() {
    static const std::unique_ptr<Device> shared = Device::create_cpu();
    return *shared;
  }
  static Handle allocate(std::size_t n) { return device().new_buffer(n); }
  static void release(Handle& b) { b.reset(); }
  static const void* address(const Handle& b) { return b.data(); }
  static std::uint64_t system_allocations() { return device().memory().system_allocations; }
};

std::size_t start_of(int thread, int threads) {
  return static_cast<std::size_t>(thread) * (kTraceLength / static_cast<std::size_t>(threads));
}

// Runs `steps` pairs from trace position `pos` on `ring`; returns the new position.
template <class A>
std::size_t walk(std::array<typename A::Handle, kWindow>& ring, std::size_t pos, std::size_t steps) {
  const auto& trace = size_trace();
  for (std::size_t i = 0; i < steps; ++i) {
    auto& slot = ring[pos % kWindow];
    A::release(slot);
    slot = A::allocate(trace[pos]);
    pos = (pos + 1) % kTraceLength;
  }
  return pos;
}

// Single-threaded, before each run: one ring per benchmark thread, all walking
// the same positions in lockstep for two cycles. At every moment each size
// class is then needed by every ring at once, so the shared nuvec device ends
// up caching as many blocks of each class as the threads can ever hold
// together, whatever their relative positions in the timed loop.
template <class A>
void warm_up(const benchmark::State& state) {
  std::vector<std::array<typename A::Handle, kWindow>> rings(static_cast<std::size_t>(state.threads()));
  for (std::size_t pos = 0; pos < 2 * kTraceLength; ++pos) {
    for (auto& ring : rings) walk<A>(ring, pos % kTraceLength, 1);
  }
  for (auto& ring : rings) {
    for (auto& slot : ring) A::release(slot);
  }
}

template <class A>
void BM_pair(benchmark::State& state) {
  const auto& trace = size_trace();
  std::array<typename A::Handle, kWindow> ring{};
  // One untimed cycle in this thread (fills the ring; warms glibc's arena).
  std::size_t pos = walk<A>(ring, start_of(state.thread_index(), state.threads()), kTraceLength);
  const std::uint64_t before = state.thread_index() == 0 ? A::system_allocations() : 0;

  for (auto _ : state) {
    auto& slot = ring[pos % kWindow];
    A::release(slot);
    slot = A::allocate(trace[pos]);
    benchmark::DoNotOptimize(A::address(slot));
    pos = (pos + 1) % kTraceLength;
  }

  if (state.thread_index() == 0) {
    state.counters["misses"] = static_cast<double>(A::system_allocations() - before);
  }
  for (auto& slot : ring) A::release(slot);
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_TEMPLATE(BM_pair, Glibc)
    ->Name("pair/glibc")
    ->Setup(warm_up<Glibc>)
    ->UseRealTime()
    ->Threads(1)
    ->Threads(2);
BENCHMARK_TEMPLATE(BM_pair, Nuvec)
    ->Name("pair/nuvec")
    ->Setup(warm_up<Nuvec>)
    ->UseRealTime()
    ->Threads(1)
    ->Threads(2);

}  // namespace
}  // namespace nuvec::bench
