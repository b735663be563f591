// Two GPUs in one process: each device keeps its own statistics and its own
// cache, a block freed on one GPU is never handed to the other, each
// buffer's memory is on its own GPU whatever device the calling thread has
// made current, and uploads land on the device asked for. Skips with fewer
// than two GPUs.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <vector>

#include "gpu.h"
#include "io/safetensors/safetensors_test_support.h"
#include "nuvec/cuda.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/nuvec.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"
#include "support/text.h"

namespace {

using nuvec::MemoryStats;
using nuvec_test::kMiB;

// The GPU a device pointer belongs to (-1 if it is not device memory).
int gpu_of(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeDevice ? a.device : -1;
}

class CudaMultiGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const int n = nuvec::cuda_device_count(); n < 2) {
      GTEST_SKIP() << "needs two CUDA devices; this machine has " << n;
    }
    gpu0_ = nuvec::Device::create_cuda(0);
    gpu1_ = nuvec::Device::create_cuda(1);
  }
  void TearDown() override {
    for (const auto* gpu : {gpu0_.get(), gpu1_.get()}) {
      if (gpu != nullptr) {
        EXPECT_EQ(nuvec_test::invariant_violations(gpu->memory()), "") << gpu->name();
      }
    }
  }
  std::unique_ptr<nuvec::Device> gpu0_, gpu1_;
};

TEST_F(CudaMultiGpuTest, EachDeviceCountsOnlyItsOwnBuffers) {
  EXPECT_EQ(gpu0_->name(), "cuda:0");
  EXPECT_EQ(gpu1_->name(), "cuda:1");
  const MemoryStats idle1 = gpu1_->memory();
  nuvec::Buffer a = gpu0_->new_buffer(3 * kMiB);
  EXPECT_EQ(gpu0_->memory().active, 4 * kMiB);
  EXPECT_EQ(gpu1_->memory(), idle1) << "an allocation on cuda:0 changed cuda:1's statistics";

  const MemoryStats held0 = gpu0_->memory();
  nuvec::Buffer b = gpu1_->new_buffer(5 * kMiB);
  EXPECT_EQ(gpu1_->memory().active, 6 * kMiB);
  EXPECT_EQ(gpu0_->memory(), held0);

  // Limits are per device too.
  gpu1_->set_memory_limit(8 * kMiB);
  EXPECT_EQ(gpu0_->memory().memory_limit, held0.memory_limit);
  EXPECT_THROW(gpu1_->new_buffer(4 * kMiB), nuvec::OutOfMemory);
  nuvec::Buffer c = gpu0_->new_buffer(4 * kMiB);  // cuda:0 is not held to cuda:1's limit
  EXPECT_EQ(gpu0_->memory().active, 8 * kMiB);
}

TEST_F(CudaMultiGpuTest, ABlockFreedOnOneGpuIsNeverServedToTheOther) {
  const std::size_t n = 6 * kMiB + 100;
  const void* first = nullptr;
  {
    nuvec::Buffer b0 = gpu0_->new_buffer(n);
    first = b0.data();
    EXPECT_EQ(gpu_of(first), 0);
  }
  const MemoryStats cached0 = gpu0_->memory();
  ASSERT_EQ(cached0.cache, 8 * kMiB) << "the block waits in cuda:0's cache";

  nuvec::Buffer b1 = gpu1_->new_buffer(n);  // same size: a cache hit, if caches were shared
  EXPECT_EQ(gpu_of(b1.data()), 1);
  EXPECT_NE(b1.data(), first);
  EXPECT_EQ(gpu1_->memory().system_allocations, 1u) << "cuda:1 had to allocate its own";
  EXPECT_EQ(gpu0_->memory(), cached0) << "cuda:0's cache was touched";

  nuvec::Buffer again = gpu0_->new_buffer(n);  // and cuda:0 still reuses its block
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(gpu0_->memory().cache, 0u);
  EXPECT_EQ(gpu0_->memory().system_allocations, cached0.system_allocations);
}

TEST_F(CudaMultiGpuTest, BuffersLandOnTheirGpuWhicheverIsCurrent) {
  for (const int current : {0, 1}) {
    SCOPED_TRACE(current);
    CUDA_ASSERT(cudaSetDevice(current));
    nuvec::Buffer b0 = gpu0_->new_buffer(kMiB + 1);
    nuvec::Buffer b1 = gpu1_->new_buffer(kMiB + 1);
    EXPECT_EQ(gpu_of(b0.data()), 0);
    EXPECT_EQ(gpu_of(b1.data()), 1);
    int now = -1;
    CUDA_ASSERT(cudaGetDevice(&now));
    EXPECT_EQ(now, current) << "nuvec left another device current";
    // Bytes go to and come back from each GPU's own memory.
    const auto bytes0 = nuvec_test::random_bytes(b0.size(), 31), bytes1 = nuvec_test::random_bytes(b1.size(), 32);
    nuvec::cuda::copy_from_host(b0, bytes0);
    nuvec::cuda::copy_from_host(b1, bytes1);
    std::vector<std::byte> back0(b0.size()), back1(b1.size());
    nuvec::cuda::copy_to_host(back0, b0);
    nuvec::cuda::copy_to_host(back1, b1);
    EXPECT_TRUE(back0 == bytes0);
    EXPECT_TRUE(back1 == bytes1);
  }
  CUDA_ASSERT(cudaSetDevice(0));
}

TEST_F(CudaMultiGpuTest, AnUploadLandsOnTheDeviceAskedFor) {
  nuvec_test::TempDir dir;
  std::vector<nuvec_test::TestTensor> tensors;
  for (int i = 0; i < 6; ++i) {
    std::string name = "t";
    name += std::to_string(i);
    tensors.push_back(nuvec_test::random_tensor(name, nuvec::io::DType::F32, {300000}, 40 + i));
  }
  nuvec::io::save_safetensors(dir / "m.safetensors", nuvec_test::views_of(tensors));
  CUDA_ASSERT(cudaSetDevice(0));
  const auto host = nuvec::io::load_safetensors(*gpu1_, dir / "m.safetensors");
  const MemoryStats before0 = gpu0_->memory();
  const auto uploaded = nuvec::cuda::upload(*gpu1_, host, {.staging_bytes = 4 * kMiB, .pipelines = 4});
  EXPECT_EQ(gpu0_->memory(), before0);
  for (const auto& t : tensors) {
    const auto& d = uploaded.at(t.name);
    EXPECT_EQ(gpu_of(d.buffer.data()), 1) << t.name;
    std::vector<std::byte> back(t.bytes.size());
    nuvec::cuda::copy_to_host(back, d.buffer);
    EXPECT_TRUE(back == t.bytes) << t.name;
  }
}

}  // namespace
