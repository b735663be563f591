// What the CUDA tests share: skipping without a GPU, and checking runtime calls.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

#include "nuvec/device.h"

namespace nuvec_test {

// The reason GPU 0 cannot be used here, or empty.
inline std::string no_gpu_reason() {
  return nuvec::cuda_device_count() > 0 ? std::string() : std::string("no CUDA device on this machine");
}

// Skips the test (from a TEST body or SetUp) when there is no GPU.
#define NUVEC_REQUIRE_GPU()                                                    \
  do {                                                                         \
    if (const std::string why = ::nuvec_test::no_gpu_reason(); !why.empty()) { \
      GTEST_SKIP() << why;                                                     \
    }                                                                          \
  } while (0)

// ASSERT that a runtime call succeeded, naming the error if not.
#define CUDA_ASSERT(call)                                                                   \
  do {                                                                                      \
    const cudaError_t cuda_assert_error = (call);                                           \
    ASSERT_EQ(cuda_assert_error, cudaSuccess) << #call << ": " << cudaGetErrorString(cuda_assert_error); \
  } while (0)

}  // namespace nuvec_test
