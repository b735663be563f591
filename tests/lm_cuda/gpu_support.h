// What the GPU kernels' tests share: f16/bf16 rounding on the host, device
// arrays (nuvec buffers of the process-wide CUDA device), a fixture that
// skips without a GPU and gives each test a stream, and the comparison
// against the CPU path's result within a stated bound.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cuda/gpu.h"  // NUVEC_REQUIRE_GPU, CUDA_ASSERT
#include "lm/half_convert.h"
#include "nuvec/cuda.h"
#include "nuvec/device.h"
#include "nuvec/lm/tensor.h"

namespace nuvec_test::gpu {

using nuvec::lm::DType;

// x rounded to nearest even as `t` stores it (f16 or bf16), as its bits.
inline std::uint16_t to_bits(DType t, float x) {
  if (t == DType::f16) return nuvec::lm::half::from_f32(x);
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);  // no NaNs here: the inputs are finite
  return static_cast<std::uint16_t>(u >> 16);
}

inline float from_bits(DType t, std::uint16_t bits) {
  if (t == DType::f16) return nuvec::lm::half::to_f32(bits);
  const std::uint32_t u = std::uint32_t{bits} << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

inline float round_to(DType t, float x) { return from_bits(t, to_bits(t, x)); }

// One unit in the last place of `t`, relative to the value: bf16 keeps 8
// significant bits, f16 11. A result computed in f32 and rounded once is
// within half of it of the exact one; a full unit leaves room for the CPU's
// and the GPU's f32 sums to round to neighbours.
inline double ulp(DType t) { return t == DType::bf16 ? 1.0 / 128 : 1.0 / 1024; }

// Normal values of standard deviation `stddev`, already rounded to `t`, so
// that the CPU and the GPU start from the same numbers.
inline std::vector<float> random_values(DType t, std::size_t n, std::uint64_t seed, float stddev = 1) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = round_to(t, d(rng));
  return v;
}

inline const char* name(DType t) { return t == DType::bf16 ? "bf16" : "f16"; }

// A device array: a buffer of the process-wide GPU device.
class GpuArray {
 public:
  // Room for `bytes`.
  explicit GpuArray(std::size_t bytes) : buffer_(nuvec::Device::cuda(0).new_buffer(bytes)) {}
  // `values` (already rounded) as elements of `t`.
  GpuArray(DType t, std::span<const float> values) : GpuArray(values.size() * 2) {
    std::vector<std::uint16_t> bits(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) bits[i] = to_bits(t, values[i]);
    nuvec::cuda::copy_from_host(buffer_, std::as_bytes(std::span(bits)));
  }
  // f32 values.
  explicit GpuArray(std::span<const float> values) : GpuArray(values.size() * 4) {
    nuvec::cuda::copy_from_host(buffer_, std::as_bytes(values));
  }

  void* data() const { return buffer_.data(); }
  float* f32() const { return reinterpret_cast<float*>(buffer_.data()); }

  // The first n elements of `t` as floats, once `stream` is done.
  std::vector<float> read(DType t, std::size_t n, cudaStream_t stream) const {
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
    std::vector<std::uint16_t> bits(n);
    nuvec::cuda::copy_to_host(std::as_writable_bytes(std::span(bits)), buffer_);
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = from_bits(t, bits[i]);
    return out;
  }
  std::vector<float> read_f32(std::size_t n, cudaStream_t stream) const {
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
    std::vector<float> out(n);
    nuvec::cuda::copy_to_host(std::as_writable_bytes(std::span(out)), buffer_);
    return out;
  }

 private:
  nuvec::Buffer buffer_;
};

// Skips without a GPU; otherwise a stream of its own for each test, checked
// at the end for a fault in any kernel queued on it.
class GpuTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    NUVEC_REQUIRE_GPU();
    CUDA_ASSERT(cudaSetDevice(0));
    CUDA_ASSERT(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_ == nullptr) return;
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    cudaStreamDestroy(stream_);
  }
  DType dtype() const { return GetParam(); }
  nuvec::Device& gpu() const { return nuvec::Device::cuda(0); }

  cudaStream_t stream_ = nullptr;
};

// Every got[i] within bound(i) of want[i] (NaN never is); reports how many
// were not and the worst, relative to its bound.
inline void expect_within(std::span<const float> got, std::span<const float> want,
                          const std::function<double(std::size_t)>& bound, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t outside = 0, worst_at = 0;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double diff = std::abs(double{got[i]} - want[i]);
    const double ratio = std::isnan(diff) ? INFINITY : diff / bound(i);
    if (ratio > 1) ++outside;
    if (ratio > worst || std::isnan(diff)) {
      worst = ratio;
      worst_at = i;
    }
  }
  EXPECT_EQ(outside, 0u) << what << ": " << outside << " of " << got.size() << " outside the bound; worst at " << worst_at
                         << ": GPU " << got[worst_at] << ", CPU " << want[worst_at] << ", " << worst << "x the bound "
                         << bound(worst_at);
}

}  // namespace nuvec_test::gpu
