// Cache-hit allocate+free pairs on one GPU, side by side in one run:
//   nuvec          Device::new_buffer / Buffer::reset on Device::cuda(0) (the arena, unless NUVEC_CUDA_ARENA=0)
//   nuvec (blocks) the same on a device with one cudaMalloc per block, reused whole
//   nuvec (C API)  nuvec_malloc / nuvec_free, as PyTorch's pluggable allocator calls them
//   torch          c10::cuda::CUDACachingAllocator::raw_alloc / raw_delete (PyTorch's caching allocator)
//   cudaMallocAsync / cudaFreeAsync on the device's default pool (release threshold: unlimited)
//   cudaMalloc / cudaFree
// Every allocator is warmed first (its cache then serves every pair). Rounds
// go round-robin over the allocators so drift hits all of them alike; each
// round times `pairs` back-to-back pairs of one size with a steady clock; the
// figure is the median over rounds, in ns per pair. Nothing touches the memory.
//
// Built where PyTorch is installed (bench/cuda/build_pair_bench.sh); prints a
// markdown table, and JSON with --json FILE.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"
#include "nuvec/device.h"
#include "support/median.h"
#include "support/cuda_check.h"

extern "C" void* nuvec_malloc(ssize_t size, int device, cudaStream_t stream);
extern "C" void nuvec_free(void* ptr, ssize_t size, int device, cudaStream_t stream);

namespace {

using nuvec_bench::median;
using nuvec_bench::check;

struct Allocator {
  std::string name;
  std::function<void(std::size_t)> pair;  // one allocate+free of this size
  bool slow = false;                      // cudaMalloc: fewer pairs per round
};

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  int rounds = 15;
  std::size_t pairs = 100000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = std::strtoull(argv[++i], nullptr, 10);
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context");
  c10::cuda::CUDACachingAllocator::get()->init(c10::cuda::device_count());

  nuvec::Device& gpu = nuvec::Device::cuda(0);
  nuvec::Device blocks(nuvec::cuda::make_backend(0, {.reservations = false}), false);
  cudaStream_t stream = nullptr;  // every allocator on the legacy default stream, as PyTorch's default
  cudaMemPool_t pool = nullptr;
  check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
  std::uint64_t threshold = UINT64_MAX;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), "release threshold");

  std::vector<Allocator> allocators = {
      {"nuvec", [&](std::size_t n) { nuvec::Buffer b = gpu.new_buffer(n); }},
      {"nuvec (blocks)", [&](std::size_t n) { nuvec::Buffer b = blocks.new_buffer(n); }},
      {"nuvec (C API)",
       [&](std::size_t n) {
         void* p = nuvec_malloc(static_cast<ssize_t>(n), 0, stream);
         nuvec_free(p, static_cast<ssize_t>(n), 0, stream);
       }},
      {"torch caching allocator",
       [&](std::size_t n) {
         void* p = c10::cuda::CUDACachingAllocator::get()->raw_alloc(n);
         c10::cuda::CUDACachingAllocator::get()->raw_delete(p);
       }},
      {"cudaMallocAsync",
       [&](std::size_t n) {
         void* p = nullptr;
         check(cudaMallocAsync(&p, n, stream), "cudaMallocAsync");
         check(cudaFreeAsync(p, stream), "cudaFreeAsync");
       }},
      {"cudaMalloc",
       [&](std::size_t n) {
         void* p = nullptr;
         check(cudaMalloc(&p, n), "cudaMalloc");
         check(cudaFree(p), "cudaFree");
       },
       true},
  };
  const std::vector<std::size_t> sizes = {512, std::size_t{1} << 20, std::size_t{32} << 20};

  // results[size][allocator] = ns per pair, one per round
  std::vector<std::vector<std::vector<double>>> results(sizes.size(),
                                                        std::vector<std::vector<double>>(allocators.size()));
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    for (auto& a : allocators) {
      for (int i = 0; i < 100; ++i) a.pair(sizes[s]);  // warm: caches filled, code paged in
    }
    for (int r = 0; r < rounds; ++r) {
      for (std::size_t a = 0; a < allocators.size(); ++a) {
        const std::size_t n = allocators[a].slow ? std::max<std::size_t>(pairs / 200, 50) : pairs;
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < n; ++i) allocators[a].pair(sizes[s]);
        const auto stop = std::chrono::steady_clock::now();
        results[s][a].push_back(std::chrono::duration<double, std::nano>(stop - start).count() / n);
      }
    }
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  std::printf("| size | allocator | ns/pair (median of %d) | min | max | vs torch |\n|---|---|---:|---:|---:|---:|\n",
              rounds);
  std::string json = "[";
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const auto is_torch = [](const Allocator& a) { return a.name == "torch caching allocator"; };
    const double torch =
        median(results[s][std::find_if(allocators.begin(), allocators.end(), is_torch) - allocators.begin()]);
    for (std::size_t a = 0; a < allocators.size(); ++a) {
      const auto& v = results[s][a];
      const double m = median(v);
      std::printf("| %zu | %s | %.1f | %.1f | %.1f | %.2fx |\n", sizes[s], allocators[a].name.c_str(), m,
                  *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()), m / torch);
      char row[256];
      std::snprintf(row, sizeof row, "%s{\"size\":%zu,\"allocator\":\"%s\",\"median_ns\":%.2f,\"rounds\":%zu}",
                    json.size() > 1 ? "," : "", sizes[s], allocators[a].name.c_str(), m, v.size());
      json += row;
    }
  }
  json += "]\n";
  const nuvec::MemoryStats stats = gpu.memory();
  std::printf("\nnuvec system allocations (cache misses): %llu, from %zu reservations (every timed pair was a cache "
              "hit); blocks: %llu (one per size)\n",
              static_cast<unsigned long long>(stats.system_allocations), gpu.counters().reservations,
              static_cast<unsigned long long>(blocks.memory().system_allocations));
  if (!json_path.empty()) std::ofstream(json_path) << json;
  return 0;
}
