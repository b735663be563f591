// Device::cuda: size classes, limits, refusals and real cudaMalloc failures,
// and what is wired on a GPU. GPU tests skip without one; the others say
// what a machine without a GPU (or nuvec without CUDA) does.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "gpu.h"
#include "nuvec/cuda.h"
#include "nuvec/nuvec.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"
#include "support/text.h"

namespace {

using nuvec::MemoryStats;
using nuvec_test::contains;
using nuvec_test::kMiB;

constexpr std::size_t kTwoMiB = 2 * kMiB;

TEST(CudaSizeClasses, FiveHundredTwelveByteStepsThenTwoMiB) {
  EXPECT_EQ(nuvec::cuda::allocation_size(0), 0u);
  EXPECT_EQ(nuvec::cuda::allocation_size(1), 512u);
  EXPECT_EQ(nuvec::cuda::allocation_size(512), 512u);
  EXPECT_EQ(nuvec::cuda::allocation_size(513), 1024u);
  EXPECT_EQ(nuvec::cuda::allocation_size(kMiB + 1), kMiB + 512);
  EXPECT_EQ(nuvec::cuda::allocation_size(kTwoMiB), kTwoMiB);
  EXPECT_EQ(nuvec::cuda::allocation_size(kTwoMiB + 1), 2 * kTwoMiB);
  EXPECT_EQ(nuvec::cuda::allocation_size(1000 * kMiB + 1), 1002 * kMiB);
  EXPECT_EQ(nuvec::cuda::allocation_size(std::numeric_limits<std::size_t>::max()), std::nullopt);
}

TEST(CudaDevice, NoSuchGpuIsAClearError) {
  const int count = nuvec::cuda_device_count();
  EXPECT_GE(count, 0);
  for (const int ordinal : {count, -1}) {
    try {
      nuvec::Device::cuda(ordinal);
      ADD_FAILURE() << "Device::cuda(" << ordinal << ") should have raised";
    } catch (const nuvec::InvalidArgument& e) {
      const std::string message = e.what();
      EXPECT_TRUE(contains(message, "no CUDA device") || contains(message, "built without CUDA")) << message;
    }
    EXPECT_THROW(nuvec::Device::create_cuda(ordinal), nuvec::InvalidArgument);
    EXPECT_THROW(nuvec::cuda::device_info(ordinal), nuvec::InvalidArgument);
  }
}

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NUVEC_REQUIRE_GPU();
    gpu_ = nuvec::Device::create_cuda(0);
  }
  void TearDown() override {
    if (gpu_) {
      EXPECT_EQ(nuvec_test::invariant_violations(gpu_->memory()), "");
    }
  }
  nuvec::Device& gpu() { return *gpu_; }
  MemoryStats stats() const { return gpu_->memory(); }

  std::unique_ptr<nuvec::Device> gpu_;
};

TEST_F(CudaDeviceTest, ProcessWideDevicePerGpu) {
  nuvec::Device& a = nuvec::Device::cuda(0);
  EXPECT_EQ(&a, &nuvec::Device::cuda(0));
  EXPECT_EQ(a.name(), "cuda:0");
  EXPECT_NE(&a, gpu_.get()) << "create_cuda makes an independent device";
}

TEST_F(CudaDeviceTest, DefaultLimitsAreTheDevicesMemory) {
  const MemoryStats s = stats();
  EXPECT_EQ(s.memory_limit, nuvec::cuda::device_info(0).total_memory);
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_ASSERT(cudaMemGetInfo(&free_bytes, &total_bytes));
  EXPECT_EQ(s.memory_limit, total_bytes);
  EXPECT_EQ(s.cache_limit, s.memory_limit);
  EXPECT_EQ(s.wired_limit, 0u);
}

TEST_F(CudaDeviceTest, BuffersAreDeviceMemoryOfTheirGpu) {
  nuvec::Buffer b = gpu().new_buffer(3 * kMiB + 7);
  EXPECT_EQ(b.capacity(), 4 * kMiB);
  cudaPointerAttributes attributes{};
  CUDA_ASSERT(cudaPointerGetAttributes(&attributes, b.data()));
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice) << "plain device memory, never managed";
  EXPECT_EQ(attributes.device, 0);
  const auto bytes = nuvec_test::random_bytes(b.size(), 21);
  nuvec::cuda::copy_from_host(b, bytes);
  std::vector<std::byte> back(b.size());
  nuvec::cuda::copy_to_host(back, b);
  EXPECT_EQ(back, bytes);
  std::vector<std::byte> too_long(b.size() + 1);
  EXPECT_THROW(nuvec::cuda::copy_to_host(too_long, b), nuvec::InvalidArgument);
  EXPECT_THROW(nuvec::cuda::copy_to_host(std::span(too_long).first(8), b, b.size() - 7), nuvec::InvalidArgument);
}

TEST_F(CudaDeviceTest, RefusalOverTheLimitChangesNothing) {
  gpu().set_memory_limit(64 * kMiB);
  nuvec::Buffer held = gpu().new_buffer(40 * kMiB);
  const MemoryStats before = stats();
  try {
    nuvec::Buffer refused = gpu().new_buffer(30 * kMiB);
    ADD_FAILURE() << "40 MiB + 30 MiB passed a 64 MiB limit";
  } catch (const nuvec::OutOfMemory& e) {
    EXPECT_EQ(e.requested(), 30 * kMiB);
    EXPECT_EQ(e.stats(), before);
    EXPECT_TRUE(contains(e.what(), "memory limit")) << e.what();
  }
  EXPECT_EQ(stats(), before);
}

TEST_F(CudaDeviceTest, CudaMallocFailureIsReportedAndClearsTheError) {
  const std::size_t total = nuvec::cuda::device_info(0).total_memory;
  gpu().set_memory_limit(std::numeric_limits<std::size_t>::max() / 2);  // only the device can say no
  nuvec::Buffer small = gpu().new_buffer(kMiB);
  const MemoryStats before = stats();
  try {
    nuvec::Buffer impossible = gpu().new_buffer(total + 1024 * kMiB);
    ADD_FAILURE() << "cudaMalloc of more than the device has succeeded";
  } catch (const nuvec::OutOfMemory& e) {
    EXPECT_TRUE(contains(e.what(), "from the system")) << e.what();
    EXPECT_EQ(e.stats().active, before.active);
  }
  const MemoryStats after = stats();
  EXPECT_EQ(after.active, before.active);
  EXPECT_EQ(after.system_allocations, before.system_allocations);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failed cudaMalloc's error must not linger";
  nuvec::Buffer next = gpu().new_buffer(5 * kMiB);  // the device still works
  EXPECT_EQ(next.capacity(), 6 * kMiB);
}

// The cache holds most of the device; a new size that fits only once the
// cache is given back must succeed: cudaMalloc fails, the allocator
// synchronizes, releases its cache and retries.
TEST_F(CudaDeviceTest, FailedCudaMallocReleasesTheCacheAndRetries) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_ASSERT(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t big = free_bytes / 10 * 6 / kTwoMiB * kTwoMiB;
  gpu().set_memory_limit(std::numeric_limits<std::size_t>::max() / 2);
  {
    nuvec::Buffer first = gpu().new_buffer(big);
  }
  ASSERT_EQ(stats().cache, big);
  // Larger than the cached block, so it cannot serve; too large for what is left.
  nuvec::Buffer second = gpu().new_buffer(big + 64 * kMiB);
  EXPECT_EQ(stats().cache, 0u);
  EXPECT_EQ(stats().active, big + 64 * kMiB);
  EXPECT_EQ(stats().system_allocations, 2u);
}

TEST_F(CudaDeviceTest, WiredMappingIsPageLockedAndUnlockedWhenUnmapped) {
  nuvec_test::TempFile file(3 * kMiB + 5, 22);
  const std::size_t m = nuvec::mapping_size(file.size());
  gpu().set_wired_limit(m);
  for (int round = 0; round < 2; ++round) {  // a second round proves the registration went with the mapping
    nuvec::MappedFile f = gpu().map_file(file.path());
    EXPECT_EQ(stats().wired, m);
    EXPECT_EQ(stats().wired_mapped, m);
    cudaPointerAttributes attributes{};
    CUDA_ASSERT(cudaPointerGetAttributes(&attributes, f.bytes().data()));
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << "cudaHostRegister'ed";
    f.reset();
    EXPECT_EQ(stats().wired, 0u);
    EXPECT_EQ(stats().mapped, 0u);
  }
}

// Device memory cannot be page-locked: with room under the wired limit a
// buffer still allocates, and `wired` counts only host memory.
TEST_F(CudaDeviceTest, DeviceBuffersAreNeverWired) {
  gpu().set_wired_limit(64 * kMiB);
  nuvec::Buffer b = gpu().new_buffer(kMiB);
  EXPECT_EQ(stats().wired, 0u);
  nuvec_test::TempFile file(kMiB, 23);
  nuvec::MappedFile f = gpu().map_file(file.path());
  EXPECT_EQ(stats().wired, nuvec::mapping_size(file.size()));
  EXPECT_EQ(stats().wired_mapped, stats().wired);
}

}  // namespace
