// Allocate+free pairs on steady-state traces: nuvec against the process's
// malloc/free, in the same binary and run, on identical traces. The malloc
// is glibc's unless the run preloads another (run_alloc_bench.sh runs glibc
// with and without trimming, jemalloc and mimalloc, each beside nuvec).
//
// Two traces of kTraceLength sizes: `loguniform` (size_trace.h: 256 B to
// 16 MiB, log-uniform) and `transformer` (transformer_sizes.h: the built-in
// model's prefill and decode requests, 128 B to 4.3 MiB, repeated).
//
// Each benchmark thread keeps kWindow buffers live in a ring; one iteration
// frees the oldest and allocates the next size of the trace in its slot (one
// pair). Thread t starts t * kTraceLength / threads into the trace. Nothing
// touches the memory: this is the allocator's own cost, the same for both.
//
// nuvec: all threads share ONE device, as real users share Device::cpu() (a
// device of Device::create_cpu(): thread caches on, NUVEC_THREAD_CACHE
// sets their largest block). Its cache is warmed (Setup, then one untimed
// cycle per thread); `misses` reports the device's new system allocations
// during the timed loop (arena reservations on the CPU; 0 in steady state).
//
// Threads: NUVEC_BENCH_THREADS, a comma-separated list (default "1,2").
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "nuvec/device.h"
#include "size_trace.h"
#include "transformer_sizes.h"

namespace nuvec::bench {
namespace {

// The process's malloc/free (glibc, or a preloaded allocator).
struct Malloc {
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

using Trace = const std::vector<std::size_t>& (*)();

std::size_t start_of(int thread, int threads) {
  return static_cast<std::size_t>(thread) * (kTraceLength / static_cast<std::size_t>(threads));
}

// Runs `steps` pairs from trace position `pos` on `ring`; returns the new position.
template <class A>
std::size_t walk(const std::vector<std::size_t>& trace, std::array<typename A::Handle, kWindow>& ring,
                 std::size_t pos, std::size_t steps) {
  for (std::size_t i = 0; i < steps; ++i) {
    auto& slot = ring[pos % kWindow];
    A::release(slot);
    slot = A::allocate(trace[pos]);
    pos = (pos + 1) % kTraceLength;
  }
  return pos;
}

// Single-threaded, before each run: one ring per benchmark thread, all walking
// the same positions in lockstep for two cycles, so that the shared nuvec
// device caches as many blocks of each class as the threads can ever hold
// together, whatever their relative positions in the timed loop.
template <class A>
void warm_up(const std::vector<std::size_t>& trace, int threads) {
  std::vector<std::array<typename A::Handle, kWindow>> rings(static_cast<std::size_t>(threads));
  for (std::size_t pos = 0; pos < 2 * kTraceLength; ++pos) {
    for (auto& ring : rings) walk<A>(trace, ring, pos % kTraceLength, 1);
  }
  for (auto& ring : rings) {
    for (auto& slot : ring) A::release(slot);
  }
}

template <class A>
void pair(benchmark::State& state, Trace which) {
  const std::vector<std::size_t>& trace = which();
  std::array<typename A::Handle, kWindow> ring{};
  // One untimed cycle in this thread (fills the ring and its thread cache).
  std::size_t pos = walk<A>(trace, ring, start_of(state.thread_index(), state.threads()), kTraceLength);
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

std::vector<int> thread_counts() {
  const char* text = std::getenv("NUVEC_BENCH_THREADS");
  std::istringstream in(text != nullptr && *text != '\0' ? text : "1,2");
  std::vector<int> counts;
  for (std::string item; std::getline(in, item, ',');) {
    const int n = std::atoi(item.c_str());
    if (n < 1) {
      std::fprintf(stderr, "NUVEC_BENCH_THREADS=%s: each entry must be a thread count of 1 or more\n", text);
      std::exit(2);
    }
    counts.push_back(n);
  }
  return counts;
}

template <class A, Trace trace>
void register_pairs(const char* allocator, const char* trace_name) {
  for (const int threads : thread_counts()) {
    benchmark::RegisterBenchmark((std::string("pair/") + trace_name + "/" + allocator).c_str(),
                                 [](benchmark::State& state) { pair<A>(state, trace); })
        ->Setup([](const benchmark::State& state) { warm_up<A>(trace(), state.threads()); })
        ->UseRealTime()
        ->Threads(threads);
  }
}

}  // namespace

void register_alloc_benchmarks() {
  register_pairs<Malloc, &size_trace>("malloc", "loguniform");
  register_pairs<Nuvec, &size_trace>("nuvec", "loguniform");
  register_pairs<Malloc, &transformer_trace>("malloc", "transformer");
  register_pairs<Nuvec, &transformer_trace>("nuvec", "transformer");
}

}  // namespace nuvec::bench

int main(int argc, char** argv) {
  nuvec::bench::register_alloc_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
