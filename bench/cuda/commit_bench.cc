// What committing device memory costs: the CUDA arena maps physical memory
// in 2 MiB granules, one handle each (src/cuda/vmm_reservations.h), where
// cudaMalloc takes a block in one call. For each size, three rounds, the
// median of:
//   cudaMalloc + cudaFree of the size;
//   VmmReservations::commit of the size, then decommit (which first waits
//   for the device) — what an arena miss and a release cost;
//   the driver calls one by one, per 2 MiB granule: cuMemCreate, cuMemMap,
//   one cuMemSetAccess over the range, cuMemUnmap, cuMemRelease;
//   the same with one handle for the whole size (what larger handles would
//   save).
// Usage: nuvec_cuda_commit_bench [MiB ...]   (default 64 1024)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "cuda/driver_api.h"
#include "cuda/vmm_reservations.h"
#include "nuvec/cuda.h"
#include "support/median.h"

namespace {

using nuvec_bench::median;

using Clock = std::chrono::steady_clock;
constexpr std::size_t kGranule = nuvec::cuda::kLargeStep;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s failed\n", what);
    std::exit(1);
  }
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10) << 20);
  if (sizes.empty()) sizes = {std::size_t{64} << 20, std::size_t{1024} << 20};
  check(cudaSetDevice(0) == cudaSuccess && cudaFree(nullptr) == cudaSuccess, "context");
  const nuvec::cuda::DriverApi* api = nuvec::cuda::driver_api();
  check(api != nullptr, "driver_api");
  nuvec::cuda::VmmReservations vmm(0, kGranule, std::size_t{64} << 30);

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

  std::printf("| size | cudaMalloc+cudaFree ms | nuvec commit ms | nuvec decommit ms | per granule: cuMemCreate us | "
              "cuMemMap us | cuMemSetAccess (whole range) ms | cuMemUnmap us | cuMemRelease us | one handle: "
              "create+map+access ms | unmap+release ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const std::size_t size : sizes) {
    const std::size_t n = size / kGranule;
    std::vector<double> malloc_ms, commit_ms, decommit_ms, create_us, map_us, access_ms, unmap_us, release_us,
        one_map_ms, one_release_ms;
    const auto reservation = vmm.reserve(size);
    check(reservation.base != nullptr, "reserve");
    CUdeviceptr raw = 0;
    check(api->mem_address_reserve(&raw, size, kGranule, 0, 0) == CUDA_SUCCESS, "cuMemAddressReserve");
    for (int round = 0; round < 3; ++round) {
      void* p = nullptr;
      auto t = Clock::now();
      check(cudaMalloc(&p, size) == cudaSuccess && cudaFree(p) == cudaSuccess, "cudaMalloc");
      malloc_ms.push_back(ms_since(t));

      t = Clock::now();
      check(vmm.commit(reservation.base, size) == 0, "commit");
      commit_ms.push_back(ms_since(t));
      t = Clock::now();
      check(vmm.decommit(reservation.base, size) == 0, "decommit");
      decommit_ms.push_back(ms_since(t));

      std::vector<CUmemGenericAllocationHandle> handles(n);
      t = Clock::now();
      for (auto& h : handles) check(api->mem_create(&h, kGranule, &prop, 0) == CUDA_SUCCESS, "cuMemCreate");
      create_us.push_back(1000 * ms_since(t) / n);
      t = Clock::now();
      for (std::size_t i = 0; i < n; ++i) {
        check(api->mem_map(raw + i * kGranule, kGranule, 0, handles[i], 0) == CUDA_SUCCESS, "cuMemMap");
      }
      map_us.push_back(1000 * ms_since(t) / n);
      t = Clock::now();
      check(api->mem_set_access(raw, size, &access, 1) == CUDA_SUCCESS, "cuMemSetAccess");
      access_ms.push_back(ms_since(t));
      t = Clock::now();
      for (std::size_t i = 0; i < n; ++i) check(api->mem_unmap(raw + i * kGranule, kGranule) == CUDA_SUCCESS, "unmap");
      unmap_us.push_back(1000 * ms_since(t) / n);
      t = Clock::now();
      for (auto h : handles) check(api->mem_release(h) == CUDA_SUCCESS, "cuMemRelease");
      release_us.push_back(1000 * ms_since(t) / n);

      CUmemGenericAllocationHandle one = 0;
      t = Clock::now();
      check(api->mem_create(&one, size, &prop, 0) == CUDA_SUCCESS && api->mem_map(raw, size, 0, one, 0) == CUDA_SUCCESS &&
                api->mem_set_access(raw, size, &access, 1) == CUDA_SUCCESS,
            "one handle");
      one_map_ms.push_back(ms_since(t));
      t = Clock::now();
      check(api->mem_unmap(raw, size) == CUDA_SUCCESS && api->mem_release(one) == CUDA_SUCCESS, "one release");
      one_release_ms.push_back(ms_since(t));
    }
    api->mem_address_free(raw, size);
    vmm.unreserve(reservation.base, reservation.size);
    std::printf("| %zu MiB | %.2f | %.2f | %.2f | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %.2f |\n", size >> 20,
                median(malloc_ms), median(commit_ms), median(decommit_ms), median(create_us), median(map_us),
                median(access_ms), median(unmap_us), median(release_us), median(one_map_ms), median(one_release_ms));
  }
  return 0;
}
