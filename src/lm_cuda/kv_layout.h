// One layer's key/value cache on the GPU. Unlike the CPU's KVCache (keys
// transposed, for its vector loops), keys and values are both
// [kv_head][capacity][head_dim] elements of f16 or bf16: a position's key is
// one contiguous row, which a decode thread reads whole with 16-byte loads
// and a prefill block copies into shared memory with coalesced ones.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "nuvec/lm/tensor.h"

namespace nuvec::lm::gpu {

struct KVLayer {
  void* keys = nullptr;    // device memory: kv_heads * capacity * head_dim elements
  void* values = nullptr;  // the same
  std::size_t capacity = 0;  // positions each head holds
  std::size_t kv_heads = 0;
  std::size_t head_dim = 0;
  DType dtype = DType::bf16;  // f16 or bf16
};

// Elements of keys (and of values) a layer of this shape holds.
inline std::size_t kv_layer_elements(std::size_t kv_heads, std::size_t capacity, std::size_t head_dim) {
  return kv_heads * capacity * head_dim;
}

// Stores `rows` positions from `first`: k and v are [rows][kv_heads * head_dim]
// (the k and v projections' rows, RoPE applied to k), of the layer's dtype.
// InvalidArgument if first + rows passes the capacity. Queued on `stream`.
// With `first_at` (device memory), the kernel reads the first position
// there when it runs (as rope's, ops.h); `first` is then only checked.
void kv_store(const KVLayer& layer, std::size_t first, std::size_t rows, const void* k, const void* v,
              cudaStream_t stream, const std::int32_t* first_at = nullptr);

}  // namespace nuvec::lm::gpu
