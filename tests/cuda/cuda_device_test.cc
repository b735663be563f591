// Device::cuda: size classes, limits, refusals and real device-memory
// failures under both policies (the arena and whole blocks), what the arena
// commits against what the device reports, and what is wired on a GPU. GPU tests skip without one; the others say
// what a machine without a GPU (or nuvec without CUDA) does.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/vmm_reservations.h"
#include "gpu.h"
#include "nuvec/cuda.h"
#include "nuvec/nuvec.h"
#include "support/scoped_env.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"
#include "support/text.h"

namespace {

using nuvec::MemoryStats;
using nuvec_test::contains;
using nuvec_test::kMiB;

constexpr std::size_t kTwoMiB = 2 * kMiB;
// How far cudaMemGetInfo may stray from what nuvec holds: the driver's own
// page tables and bookkeeping, a few granules.
constexpr std::size_t kSlack = 4 * kTwoMiB;

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
  EXPECT_EQ(s.wired_limit, nuvec::cuda::kDefaultWiredLimit) << "room for an upload's staging";
}

// The per-device forms of the limit variables: NUVEC_MEMORY_LIMIT_CUDA0 wins
// for GPU 0 over NUVEC_MEMORY_LIMIT; the CPU's and another GPU's forms leave
// it alone.
TEST(CudaDeviceEnvironment, PerDeviceLimitsWinForTheirGpu) {
  NUVEC_REQUIRE_GPU();
  nuvec_test::ScopedEnv memory("NUVEC_MEMORY_LIMIT", "1GiB");
  nuvec_test::ScopedEnv cache("NUVEC_CACHE_LIMIT", nullptr);
  nuvec_test::ScopedEnv wired("NUVEC_WIRED_LIMIT", nullptr);
  nuvec_test::ScopedEnv memory_gpu("NUVEC_MEMORY_LIMIT_CUDA0", "256MiB");
  nuvec_test::ScopedEnv wired_gpu("NUVEC_WIRED_LIMIT_CUDA0", "64MiB");
  nuvec_test::ScopedEnv memory_cpu("NUVEC_MEMORY_LIMIT_CPU", "8MiB");
  nuvec_test::ScopedEnv memory_other("NUVEC_MEMORY_LIMIT_CUDA1", "16MiB");
  const MemoryStats s = nuvec::Device::create_cuda(0)->memory();
  EXPECT_EQ(s.memory_limit, 256u << 20);
  EXPECT_EQ(s.cache_limit, 256u << 20);
  EXPECT_EQ(s.wired_limit, 64u << 20);
  EXPECT_EQ(nuvec::Device::create_cpu()->memory().memory_limit, 8u << 20);
  if (nuvec::cuda_device_count() > 1) EXPECT_EQ(nuvec::Device::create_cuda(1)->memory().memory_limit, 16u << 20);
  nuvec_test::ScopedEnv unset_gpu("NUVEC_MEMORY_LIMIT_CUDA0", nullptr);
  EXPECT_EQ(nuvec::Device::create_cuda(0)->memory().memory_limit, 1u << 30);
}

// ---------------------------------------------------------------------------
// Device memory under both policies: blocks carved from reserved address
// space with 2 MiB granules committed as needed (the arena, the default),
// and one cudaMalloc per block reused whole.

class CudaMemoryTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    NUVEC_REQUIRE_GPU();
    gpu_ = std::make_unique<nuvec::Device>(nuvec::cuda::make_backend(0, {.reservations = arena()}), false);
  }
  void TearDown() override {
    if (gpu_) {
      EXPECT_EQ(nuvec_test::invariant_violations(gpu_->memory()), "");
      const MemoryStats s = gpu_->memory();
      EXPECT_GE(committed().bytes, s.active + s.cache) << "the device gave at least what the statistics count";
    }
  }
  bool arena() const { return GetParam(); }
  nuvec::Device& gpu() { return *gpu_; }
  MemoryStats stats() const { return gpu_->memory(); }
  nuvec::detail::Committed committed() const {
    const nuvec::DeviceCounters c = (*gpu_).counters();
    return {c.committed.value(), c.committed_peak.value()};
  }

  std::unique_ptr<nuvec::Device> gpu_;
};

INSTANTIATE_TEST_SUITE_P(Policies, CudaMemoryTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "arena" : "blocks"; });

// The device's free memory (cudaMemGetInfo).
std::size_t device_free() {
  std::size_t free_bytes = 0, total_bytes = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  return free_bytes;
}

// Takes all but about `leave` bytes of the device with plain cudaMalloc, so
// that tests of a full device need not fill 140 GB through nuvec.
class Filler {
 public:
  explicit Filler(std::size_t leave) {
    const std::size_t free_bytes = device_free();
    // The driver keeps a little for itself: ask for a little less until it gives.
    for (std::size_t less = 0; less < 64 * kMiB && free_bytes > leave + less; less += kTwoMiB) {
      if (cudaMalloc(&memory_, free_bytes - leave - less) == cudaSuccess) return;
      (void)cudaGetLastError();
      memory_ = nullptr;
    }
  }
  ~Filler() {
    if (memory_ != nullptr) cudaFree(memory_);
  }
  bool ok() const { return memory_ != nullptr; }

 private:
  void* memory_ = nullptr;
};

TEST_P(CudaMemoryTest, BuffersAreDeviceMemoryOfTheirGpu) {
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

TEST_P(CudaMemoryTest, RefusalOverTheLimitChangesNothing) {
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

// More than the card has: the arena reserves the address space, the commit
// is refused (ENOMEM) and the reservation goes back; whole blocks see
// cudaMalloc fail. Either way a clear OutOfMemory, and no statistic moves.
TEST_P(CudaMemoryTest, ARequestLargerThanTheCardIsRefusedClearlyAndChangesNothing) {
  const std::size_t total = nuvec::cuda::device_info(0).total_memory;
  gpu().set_memory_limit(std::numeric_limits<std::size_t>::max() / 2);  // only the device can say no
  nuvec::Buffer small = gpu().new_buffer(kMiB);
  const MemoryStats before = stats();
  const auto committed_before = committed();
  const std::size_t free_before = device_free();
  try {
    nuvec::Buffer impossible = gpu().new_buffer(total + 1024 * kMiB);
    ADD_FAILURE() << "more than the device has was allocated";
  } catch (const nuvec::OutOfMemory& e) {
    EXPECT_TRUE(contains(e.what(), "from the system")) << e.what();
    EXPECT_TRUE(contains(e.what(), "Cannot allocate memory")) << e.what();
    EXPECT_EQ(e.stats(), before);
  }
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(committed().bytes, committed_before.bytes);
  EXPECT_NEAR(double(device_free()), double(free_before), double(kSlack));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failure's error must not linger";
  nuvec::Buffer next = gpu().new_buffer(5 * kMiB);  // the device still works
  EXPECT_EQ(next.capacity(), 6 * kMiB);
}

// The device is nearly full (plain cudaMalloc holds the rest): a request a
// little larger than what is left fails part of the way. In the arena the
// granules committed before the refusal go back (cudaMemGetInfo sees them
// free again) and no statistic moves.
TEST_P(CudaMemoryTest, ARefusalPartOfTheWayLeavesNothingBehind) {
  gpu().set_memory_limit(std::numeric_limits<std::size_t>::max() / 2);
  nuvec::Buffer small = gpu().new_buffer(1000);
  Filler filler(24 * kMiB);
  ASSERT_TRUE(filler.ok());
  const MemoryStats before = stats();
  const auto committed_before = committed();
  const std::size_t free_before = device_free();
  ASSERT_LT(free_before, 40 * kMiB);
  EXPECT_THROW(gpu().new_buffer(40 * kMiB), nuvec::OutOfMemory);
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(committed().bytes, committed_before.bytes);
  EXPECT_NEAR(double(device_free()), double(free_before), double(kSlack));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  nuvec::Buffer fits = gpu().new_buffer(4 * kMiB);  // what is left still serves
  EXPECT_EQ(fits.capacity(), 4 * kMiB);
}

// The cache holds most of what is left of the device; a new size that fits
// only once the cache is given back must succeed: the commit (or cudaMalloc)
// fails, the allocator synchronizes, releases its cache and retries.
TEST_P(CudaMemoryTest, ARefusalReleasesTheCacheAndRetries) {
  Filler filler(4096 * kMiB);
  ASSERT_TRUE(filler.ok());
  const std::size_t big = device_free() / 10 * 6 / kTwoMiB * kTwoMiB;
  gpu().set_memory_limit(std::numeric_limits<std::size_t>::max() / 2);
  {
    nuvec::Buffer first = gpu().new_buffer(big);
    CUDA_ASSERT(cudaMemset(first.data(), 1, big));
  }
  ASSERT_EQ(stats().cache, big);
  // Larger than the cached block, so it cannot serve; too large for what is left.
  nuvec::Buffer second = gpu().new_buffer(big + 64 * kMiB);
  CUDA_ASSERT(cudaMemset(second.data(), 2, second.size()));
  CUDA_ASSERT(cudaDeviceSynchronize());
  EXPECT_EQ(stats().cache, 0u);
  EXPECT_EQ(stats().active, big + 64 * kMiB);
  // Two misses, whatever the policy: whole blocks, two cudaMallocs; the
  // arena, one reservation for both.
  EXPECT_EQ(stats().system_allocations, 2u);
  EXPECT_EQ(gpu().counters().reservations, arena() ? 1u : 0u);
  EXPECT_EQ(committed().bytes, big + 64 * kMiB);
}

// Freed memory stays committed while cached; clear_cache gives it back to
// the device, and cudaMemGetInfo sees it.
TEST_P(CudaMemoryTest, ReleasedPagesGoBackToTheDevice) {
  const std::size_t free_before = device_free();
  {
    nuvec::Buffer b = gpu().new_buffer(1024 * kMiB);
    CUDA_ASSERT(cudaMemset(b.data(), 3, b.size()));
    CUDA_ASSERT(cudaDeviceSynchronize());
  }
  EXPECT_EQ(stats().cache, 1024 * kMiB);
  EXPECT_EQ(committed().bytes, 1024 * kMiB);
  EXPECT_LE(device_free() + 1024 * kMiB, free_before + kSlack) << "cached memory is still the allocator's";
  gpu().clear_cache();
  EXPECT_EQ(stats().cache, 0u);
  EXPECT_EQ(committed().bytes, 0u);
  EXPECT_NEAR(double(device_free()), double(free_before), double(kSlack));
}

// The arena's committed bytes are what the device gave: cudaMemGetInfo's
// free memory falls by exactly as much. Small blocks share 2 MiB granules,
// each committed once.
TEST(CudaArena, CommittedBytesAreWhatTheDeviceGave) {
  NUVEC_REQUIRE_GPU();
  nuvec::Device gpu(nuvec::cuda::make_backend(0, {}), false);
  const auto committed = [&] { return nuvec::detail::Committed{gpu.counters().committed.value(), gpu.counters().committed_peak.value()}; };
  const std::size_t free_before = device_free();
  std::vector<nuvec::Buffer> small;
  for (int i = 0; i < 3; ++i) small.push_back(gpu.new_buffer(1000));
  EXPECT_EQ(committed().bytes, kTwoMiB) << "three small blocks, one granule";
  // The largest small block (2 MiB - 512 B) crosses into the next granule.
  small.push_back(gpu.new_buffer(kTwoMiB - 512));
  EXPECT_EQ(committed().bytes, 2 * kTwoMiB);
  std::vector<nuvec::Buffer> large;
  for (int i = 0; i < 20; ++i) large.push_back(gpu.new_buffer(static_cast<std::size_t>(i + 1) * 3 * kMiB + 5));
  for (nuvec::Buffer& b : small) CUDA_ASSERT(cudaMemset(b.data(), 7, b.size()));
  for (nuvec::Buffer& b : large) CUDA_ASSERT(cudaMemset(b.data(), 7, b.size()));
  CUDA_ASSERT(cudaDeviceSynchronize());
  const MemoryStats s = gpu.memory();
  const std::size_t given = committed().bytes;
  EXPECT_EQ(given, 2 * kTwoMiB + (s.active - (3 * 1024 + kTwoMiB - 512)));
  EXPECT_EQ(committed().peak, given);
  // The device's own count (within kSlack: the driver's page tables).
  EXPECT_NEAR(double(free_before - device_free()), double(given), double(kSlack));
  large.erase(large.begin(), large.begin() + 10);
  small.clear();
  gpu.clear_cache();
  EXPECT_EQ(committed().bytes, gpu.memory().active) << "only the live large blocks stay";
  EXPECT_EQ(committed().peak, given);
  gpu.reset_peak();
  EXPECT_EQ(committed().peak, committed().bytes);
  large.clear();
  gpu.clear_cache();
  EXPECT_EQ(committed().bytes, 0u);
  EXPECT_NEAR(double(device_free()), double(free_before), double(kSlack));
}

// A commit maps its new granules in chunks (one physical allocation each);
// a chunk goes back to the device only once all of it is decommitted, and
// until then its decommitted part is still held (and counted). Sizes are
// multiples of 64 MiB so that cudaMemGetInfo's slack cannot hide a chunk.
TEST(CudaArena, AChunkGoesBackWholeAndIsCountedUntilThen) {
  NUVEC_REQUIRE_GPU();
  constexpr std::size_t kChunk = 128 * kMiB, kHalf = kChunk / 2;
  nuvec::cuda::VmmReservations vmm(0, kTwoMiB, 8 * kChunk, kChunk);
  EXPECT_EQ(vmm.chunk_bytes(), kChunk);
  const auto r = vmm.reserve(8 * kChunk);
  ASSERT_NE(r.base, nullptr);
  auto* base = static_cast<std::byte*>(r.base);
  const std::size_t free_before = device_free();
  ASSERT_EQ(vmm.commit(base, 2 * kChunk), 0);  // two chunks
  CUDA_ASSERT(cudaMemset(base, 1, 2 * kChunk));
  CUDA_ASSERT(cudaDeviceSynchronize());
  EXPECT_EQ(vmm.committed().bytes, 2 * kChunk);
  EXPECT_NEAR(double(free_before - device_free()), double(2 * kChunk), double(kSlack));

  ASSERT_EQ(vmm.decommit(base, kHalf), 0);  // half of the first chunk: still held
  EXPECT_EQ(vmm.committed().bytes, 2 * kChunk);
  EXPECT_NEAR(double(free_before - device_free()), double(2 * kChunk), double(kSlack));
  ASSERT_EQ(vmm.commit(base, kHalf), 0) << "an orphaned granule is taken back";
  EXPECT_EQ(vmm.committed().bytes, 2 * kChunk);
  CUDA_ASSERT(cudaMemset(base, 2, kHalf));  // and is mapped, readable and writable
  CUDA_ASSERT(cudaDeviceSynchronize());

  ASSERT_EQ(vmm.decommit(base, kHalf), 0);
  ASSERT_EQ(vmm.decommit(base + kHalf, kHalf), 0);  // the rest of it: the chunk goes back
  EXPECT_EQ(vmm.committed().bytes, kChunk);
  EXPECT_NEAR(double(free_before - device_free()), double(kChunk), double(kSlack));
  EXPECT_EQ(vmm.committed().peak, 2 * kChunk);

  // A commit across what is held and what is not maps only the new part.
  ASSERT_EQ(vmm.commit(base + kHalf, kChunk), 0);
  EXPECT_EQ(vmm.committed().bytes, kChunk + kHalf);
  CUDA_ASSERT(cudaMemset(base + kHalf, 3, kChunk));
  CUDA_ASSERT(cudaDeviceSynchronize());
  ASSERT_EQ(vmm.decommit(base, 2 * kChunk), 0);
  EXPECT_EQ(vmm.committed().bytes, 0u);
  EXPECT_NEAR(double(device_free()), double(free_before), double(kSlack));
  EXPECT_EQ(vmm.unreserve(r.base, r.size), 0);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaArena, TheEnvironmentChoosesTheCommitChunk) {
  NUVEC_REQUIRE_GPU();
  for (const char* bad : {"3", "0", "32x", "", "4194304"}) {
    nuvec_test::ScopedEnv env("NUVEC_CUDA_COMMIT_MIB", bad);
    try {
      nuvec::cuda::make_backend(0);
      ADD_FAILURE() << "NUVEC_CUDA_COMMIT_MIB=" << bad << " was accepted";
    } catch (const nuvec::InvalidArgument& e) {
      EXPECT_TRUE(contains(e.what(), std::string("NUVEC_CUDA_COMMIT_MIB=") + bad)) << e.what();
    }
  }
  nuvec_test::ScopedEnv env("NUVEC_CUDA_COMMIT_MIB", "2");  // every granule its own allocation, as before
  nuvec::Device gpu(nuvec::cuda::make_backend(0), false);
  {
    nuvec::Buffer b = gpu.new_buffer(64 * kMiB);
    EXPECT_EQ(gpu.counters().committed.value(), 64 * kMiB);
  }
  gpu.clear_cache();
  EXPECT_EQ(gpu.counters().committed.value(), 0u);
}

TEST(CudaArena, TheEnvironmentChoosesThePolicy) {
  NUVEC_REQUIRE_GPU();
  {
    nuvec_test::ScopedEnv env("NUVEC_CUDA_ARENA", "0");
    EXPECT_FALSE((nuvec::cuda::make_backend(0)->reservations() != nullptr));
  }
  {
    nuvec_test::ScopedEnv env("NUVEC_CUDA_ARENA", "1");
    EXPECT_TRUE((nuvec::cuda::make_backend(0)->reservations() != nullptr));
  }
  {
    nuvec_test::ScopedEnv env("NUVEC_CUDA_ARENA", "yes");
    try {
      nuvec::cuda::make_backend(0);
      ADD_FAILURE() << "a malformed NUVEC_CUDA_ARENA was accepted";
    } catch (const nuvec::InvalidArgument& e) {
      EXPECT_TRUE(contains(e.what(), "NUVEC_CUDA_ARENA=yes")) << e.what();
    }
  }
  nuvec_test::ScopedEnv unset("NUVEC_CUDA_ARENA", nullptr);
  EXPECT_TRUE((nuvec::cuda::make_backend(0)->reservations() != nullptr)) << "the arena is the default";
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
