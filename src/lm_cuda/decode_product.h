// The products of a decode step, y = x · wᵀ (+ bias) for the one row x of
// k elements, as their own kernels rather than cuBLASLt's: a step reads
// every weight once and nothing else of size, so its products are bound by
// the memory's bandwidth, and a product of one row gains nothing from
// tensor-core tiles built for many. A warp per output reads its weight row
// 16 bytes a lane at a time (four loads in flight), x waits in shared
// memory, the products are summed in f32 and the warp's lanes added by
// shuffles. One launch covers several products of the same x (q, k and v
// of a layer), and gate and up with SwiGLU on their results (the MLP's
// first half), so a layer is four product launches instead of seven.
//
// Each entry point returns false, having queued nothing, for a shape or
// alignment its kernel is not built for (k not a multiple of 8 or past
// kMaxK, a pointer not 16-byte aligned); the caller then uses gpu::Linear.
// The arguments' types as Linear's: x, w and bias of `dtype` (f16 or bf16),
// y of dtype or f32. Queued on `stream`; nothing waits.
#pragma once

#include <cstddef>
#include <span>

#include <cuda_runtime_api.h>

#include "nuvec/lm/tensor.h"

namespace nuvec::lm::gpu {

// One product of a launch: w [n][k] (a checkpoint's layout), bias [n] or
// null, y [n].
struct DecodeProduct {
  const void* w = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  std::size_t n = 0;
};

// x's room in shared memory: 48 KiB, a block's without opting in.
inline constexpr std::size_t kMaxDecodeProductK = 24576;

// Up to three products of the same x, in one launch.
bool decode_products(const void* x, std::size_t k, std::span<const DecodeProduct> products, DType dtype,
                     DType y_dtype, cudaStream_t stream);

// out[j] = silu(g[j]) * u[j], g = x · gate[j] (+ gate_bias[j]) and u = x ·
// up[j] (+ up_bias[j]) each rounded to `dtype` first, as the unfused path
// rounds them (gpu::swiglu over two products' outputs).
bool decode_swiglu_product(const void* x, std::size_t k, const DecodeProduct& gate, const DecodeProduct& up,
                           void* out, DType dtype, cudaStream_t stream);

}  // namespace nuvec::lm::gpu
