// The products of the GPU path, y = x · wᵀ (+ bias), as ops::linear computes
// them on the CPU, through cuBLASLt: x [m][k] and w [n][k] (a checkpoint's
// layout: one row per output) of f16 or bf16, products summed in f32, y
// [m][n] rounded to x's dtype or kept f32 (logits). cuBLASLt is given its
// workspace (a nuvec buffer, tagged "scratch") rather than allocating one;
// the plan for each shape is found once and kept. Checkpoints' k and n are
// multiples of 8, so every row starts at a multiple of 16 bytes, which is
// what cuBLASLt's kernels are built for; another shape gets whatever kernel
// it has for that alignment (InvalidArgument where it has none).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <tuple>

#include <cuda_runtime_api.h>

#include "nuvec/buffer.h"
#include "nuvec/device.h"
#include "nuvec/lm/tensor.h"

namespace nuvec::lm::gpu {

class Linear {
 public:
  // cuBLASLt's guidance for Hopper: 32 MiB lets it pick its fastest kernels.
  static constexpr std::size_t kDefaultWorkspace = std::size_t{32} << 20;

  // OutOfMemory past the device's limit; IoError if cuBLASLt cannot start.
  Linear(Device& device, cudaStream_t stream, std::size_t workspace_bytes = kDefaultWorkspace);
  ~Linear();
  Linear(const Linear&) = delete;
  Linear& operator=(const Linear&) = delete;

  // y = x · wᵀ (+ bias[n], of y's dtype; may be null), queued on `stream`.
  // x and w of `dtype` (f16 or bf16); y of `y_dtype` (dtype or f32). The
  // workspace serves one stream at a time: calls on different streams must
  // be ordered by the caller. InvalidArgument for other dtypes or a shape
  // cuBLASLt has no kernel for; IoError if it fails.
  void operator()(const void* x, std::size_t m, std::size_t k, const void* w, std::size_t n, DType dtype,
                  const void* bias, void* y, DType y_dtype, cudaStream_t stream);

  // Shapes planned so far (each planned once: the test checks it).
  std::size_t plans() const { return plans_.size(); }

 private:
  struct Plan;
  // m, n, k, dtype, y_dtype, bias or not, and the alignments of x, w and y
  // (cuBLASLt's kernels differ by the alignment they may assume).
  using Key = std::tuple<std::size_t, std::size_t, std::size_t, DType, DType, bool, unsigned, unsigned, unsigned>;
  const Plan& plan(const Key& key);

  void* handle_ = nullptr;  // cublasLtHandle_t
  Buffer workspace_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace nuvec::lm::gpu
