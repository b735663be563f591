// How much device memory cudaMalloc really takes for a request, measured with
// cudaMemGetInfo: for each size, 64 allocations are made and the drop in free
// memory is divided by 64. This is what nuvec's CUDA size classes must count
// to be honest (docs/cuda.md): prints a markdown table.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "support/cuda_check.h"

namespace {

using nuvec_bench::check;

std::size_t free_memory() {
  std::size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  return free_bytes;
}

}  // namespace

int main() {
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "context");
  constexpr int kCount = 64;
  constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;
  const std::size_t sizes[] = {256,          512,          513,          4 * KiB,       64 * KiB,     100 * KiB + 1,
                               512 * KiB,    700 * KiB,    MiB - 512,    MiB,           MiB + 512,    3 * MiB / 2,
                               2 * MiB - 512, 2 * MiB,     2 * MiB + 512, 3 * MiB,      4 * MiB,      10 * MiB + 1,
                               20 * MiB + 1, 64 * MiB + 1};
  std::printf("| request (B) | device memory taken per allocation (B) | in 2 MiB pages | address alignment seen |\n");
  std::printf("|---:|---:|---:|---:|\n");
  for (const std::size_t size : sizes) {
    std::vector<void*> blocks(kCount);
    const std::size_t before = free_memory();
    std::uintptr_t alignment_bits = 0;
    for (void*& p : blocks) {
      check(cudaMalloc(&p, size), "cudaMalloc");
      alignment_bits |= reinterpret_cast<std::uintptr_t>(p);
    }
    const std::size_t after = free_memory();
    for (void* p : blocks) check(cudaFree(p), "cudaFree");
    const double per = static_cast<double>(before - after) / kCount;
    std::printf("| %zu | %.0f | %.3f | %llu |\n", size, per, per / (2.0 * MiB),
                static_cast<unsigned long long>(alignment_bits & -alignment_bits));
  }
  return 0;
}
