// Stream-ordered reuse on a GPU. A stream is held back by a host function
// that waits for the test's go-ahead, so "the device waits" and "the host
// did not wait" are both observable with cudaStreamQuery, without timing:
// a freed buffer's late write (a memset queued behind the gate) must land
// before the next owner's write on another stream, and reuse on the same
// stream must not wait at all.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cuda/cuda_backend.h"
#include "gpu.h"
#include "nuvec/cuda.h"
#include "nuvec/nuvec.h"
#include "support/text.h"

namespace {

using nuvec_test::kMiB;

// Holds back the work queued after it on a stream until open() (or the
// destructor: a test that fails must not leave a stream blocked forever).
class Gate {
 public:
  explicit Gate(cudaStream_t stream) : stream_(stream) {
    EXPECT_EQ(cudaLaunchHostFunc(stream, &Gate::wait, this), cudaSuccess);
  }
  // The host function reads this object: it must be done before it goes.
  ~Gate() {
    open();
    cudaStreamSynchronize(stream_);
  }
  void open() { open_.store(true, std::memory_order_release); }
  // The stream was destroyed: the destructor must not name it (once open, the
  // caller waits for the host function by another way).
  void forget_stream() { stream_ = nullptr; }

 private:
  static void wait(void* self) {
    // The driver's callback thread: no CUDA calls allowed here.
    while (!static_cast<Gate*>(self)->open_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  cudaStream_t stream_;
  std::atomic<bool> open_{false};
};

// Under both policies: blocks carved from reserved address space (the
// arena, true) and one cudaMalloc per block (false).
class CudaStreamTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    NUVEC_REQUIRE_GPU();
    gpu_ = std::make_unique<nuvec::Device>(nuvec::cuda::make_backend(0, {.reservations = GetParam()}), false);
    CUDA_ASSERT(cudaSetDevice(0));
    // Non-blocking: no implicit ordering with the legacy default stream.
    CUDA_ASSERT(cudaStreamCreateWithFlags(&s1_, cudaStreamNonBlocking));
    CUDA_ASSERT(cudaStreamCreateWithFlags(&s2_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (s1_ != nullptr) {
      cudaStreamSynchronize(s1_);
      cudaStreamDestroy(s1_);
    }
    if (s2_ != nullptr) {
      cudaStreamSynchronize(s2_);
      cudaStreamDestroy(s2_);
    }
  }
  static std::uintptr_t bits(cudaStream_t s) { return reinterpret_cast<std::uintptr_t>(s); }

  std::unique_ptr<nuvec::Device> gpu_;
  cudaStream_t s1_ = nullptr;
  cudaStream_t s2_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(Policies, CudaStreamTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "arena" : "blocks"; });

TEST_P(CudaStreamTest, ReuseOnAnotherStreamWaitsOnTheDeviceForTheLateWrite) {
  constexpr std::size_t len = 8 * kMiB;
  std::byte* address = nullptr;
  {
    Gate gate(s1_);
    {
      nuvec::Buffer b = gpu_->new_buffer(len, bits(s1_));
      address = b.data();
      // The late write: queued on s1 behind the gate, then the buffer is freed.
      CUDA_ASSERT(cudaMemsetAsync(b.data(), 0xAA, len, s1_));
    }
    nuvec::Buffer reused = gpu_->new_buffer(len, bits(s2_));
    ASSERT_EQ(reused.data(), address) << "the cached block serves the new stream";
    EXPECT_EQ(cudaStreamQuery(s1_), cudaErrorNotReady) << "the host must not have waited for s1";
    CUDA_ASSERT(cudaMemsetAsync(reused.data(), 0x55, len, s2_));
    EXPECT_EQ(cudaStreamQuery(s2_), cudaErrorNotReady) << "s2 must wait for s1's late write, on the device";
    gate.open();
    CUDA_ASSERT(cudaStreamSynchronize(s2_));
    std::vector<std::byte> back(len);
    nuvec::cuda::copy_to_host(back, reused);
    for (std::size_t i = 0; i < len; i += 4093) {
      ASSERT_EQ(back[i], std::byte{0x55}) << "byte " << i << ": the late write on s1 landed after s2's";
    }
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// A stream destroyed while its freed block's late write is still queued (a
// session ends, its blocks stay cached): the next owner, on another stream,
// still waits for that write on the device, and nothing touches the
// destroyed stream (compute-sanitizer reports any call that names it; the
// GPU machine's run puts this test under it).
TEST_P(CudaStreamTest, ReuseAfterTheFreeingStreamWasDestroyedStillWaits) {
  constexpr std::size_t len = 8 * kMiB;
  Gate gate(s1_);
  std::byte* address = nullptr;
  {
    nuvec::Buffer b = gpu_->new_buffer(len, bits(s1_));
    address = b.data();
    CUDA_ASSERT(cudaMemsetAsync(b.data(), 0xAA, len, s1_));
  }
  // Returns at once; the stream's queued work (gate, late write) runs on.
  CUDA_ASSERT(cudaStreamDestroy(s1_));
  s1_ = nullptr;
  gate.forget_stream();
  nuvec::Buffer reused = gpu_->new_buffer(len, bits(s2_));
  ASSERT_EQ(reused.data(), address);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  CUDA_ASSERT(cudaMemsetAsync(reused.data(), 0x55, len, s2_));
  EXPECT_EQ(cudaStreamQuery(s2_), cudaErrorNotReady) << "s2 must wait for the destroyed stream's late write";
  gate.open();
  CUDA_ASSERT(cudaStreamSynchronize(s2_));  // after the gate's host function, which s2 waited for
  std::vector<std::byte> back(len);
  nuvec::cuda::copy_to_host(back, reused);
  for (std::size_t i = 0; i < len; i += 4093) {
    ASSERT_EQ(back[i], std::byte{0x55}) << "byte " << i << ": the late write landed after s2's";
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_P(CudaStreamTest, ReuseOnTheSameStreamDoesNotWait) {
  constexpr std::size_t len = 3 * kMiB;
  Gate gate(s1_);
  std::byte* address = nullptr;
  {
    nuvec::Buffer b = gpu_->new_buffer(len, bits(s1_));
    address = b.data();
    CUDA_ASSERT(cudaMemsetAsync(b.data(), 0x11, len, s1_));
  }
  nuvec::Buffer again = gpu_->new_buffer(len, bits(s1_));
  EXPECT_EQ(again.data(), address);
  CUDA_ASSERT(cudaMemsetAsync(again.data(), 0x22, len, s1_));
  // The stream orders the two writes by itself; s2 was never involved.
  EXPECT_EQ(cudaStreamQuery(s1_), cudaErrorNotReady);
  EXPECT_EQ(cudaStreamQuery(s2_), cudaSuccess);
  gate.open();
  CUDA_ASSERT(cudaStreamSynchronize(s1_));
  std::vector<std::byte> back(len);
  nuvec::cuda::copy_to_host(back, again);
  EXPECT_EQ(back.front(), std::byte{0x22});
  EXPECT_EQ(back.back(), std::byte{0x22});
}

// The legacy default stream (0) takes part like any other.
TEST_P(CudaStreamTest, ReuseFromAStreamOntoTheDefaultStreamWaits) {
  constexpr std::size_t len = kMiB;
  Gate gate(s1_);
  std::byte* address = nullptr;
  {
    nuvec::Buffer b = gpu_->new_buffer(len, bits(s1_));
    address = b.data();
    CUDA_ASSERT(cudaMemsetAsync(b.data(), 0x33, len, s1_));
  }
  nuvec::Buffer reused = gpu_->new_buffer(len);  // stream 0
  ASSERT_EQ(reused.data(), address);
  CUDA_ASSERT(cudaMemsetAsync(reused.data(), 0x44, len, nullptr));
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaErrorNotReady);
  gate.open();
  CUDA_ASSERT(cudaDeviceSynchronize());
  std::vector<std::byte> back(len);
  nuvec::cuda::copy_to_host(back, reused);
  EXPECT_EQ(back.front(), std::byte{0x44});
  EXPECT_EQ(back.back(), std::byte{0x44});
}

// Giving a freed block's memory back to the device (clear_cache, a trim)
// must wait for the work still queued on it: unmapping a granule that a
// kernel is about to write would make that write fault (or land in memory
// the device has since given to someone else). The host waits; the late
// write lands; only then does the memory go.
TEST_P(CudaStreamTest, ReleasingTheCacheWaitsForWorkQueuedOnIt) {
  constexpr std::size_t len = 6 * kMiB;
  Gate gate(s1_);
  {
    nuvec::Buffer b = gpu_->new_buffer(len, bits(s1_));
    CUDA_ASSERT(cudaMemsetAsync(b.data(), 0x66, len, s1_));
  }
  ASSERT_EQ(cudaStreamQuery(s1_), cudaErrorNotReady);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gate.open();
  });
  gpu_->clear_cache();
  EXPECT_EQ(cudaStreamQuery(s1_), cudaSuccess) << "the memory went back while a write to it was still queued";
  opener.join();
  EXPECT_EQ(gpu_->memory().cache, 0u);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
