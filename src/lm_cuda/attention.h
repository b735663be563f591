// Grouped-query causal attention on the GPU over a KVLayer (kv_layout.h),
// softmax(q · Kᵀ / sqrt(head_dim)) · V as attention::attend computes it on
// the CPU: f16/bf16 in, scores, softmax and weighted sums in f32 with an
// online softmax (no score matrix is held), the result rounded once to the
// cache's dtype. q and out are [rows][heads * head_dim] of that dtype, q
// with RoPE applied; the cache already holds positions 0 .. first + rows - 1.
// Both queue one kernel on `stream` and wait for nothing.
//
// Limits the kernels are built for: head_dim a multiple of 8, at most
// kMaxHeadDim (256); at most kMaxGroup (16) query heads per key/value head.
// InvalidArgument past them. Kernels: decode_attention.cu, prefill_attention.cu.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "lm_cuda/kv_layout.h"
#include "lm_cuda/launch.h"
#include "nuvec/buffer.h"
#include "nuvec/device.h"

namespace nuvec::lm::gpu {

struct AttentionShape {
  std::size_t heads = 0;     // query heads
  std::size_t kv_heads = 0;  // key/value heads; heads / kv_heads queries share each
  std::size_t head_dim = 0;
  std::size_t window = 0;  // a query sees keys fewer than `window` positions back; 0: all
};

// Decode's scratch: a step's positions are split among blocks so that a few
// key/value heads still fill the GPU (flash-decoding), and the last block of
// each head to finish combines the others' partial results, in the same
// kernel. It needs room for every split's partial sums and one counter per
// head, which must start at zero (the constructor clears them; the kernel
// leaves them zero again). Device memory from `device`, a nuvec buffer
// tagged "scratch"; one stream at a time.
class DecodeScratch {
 public:
  // The most splits a step uses per key/value head.
  static constexpr std::size_t kMaxSplits = 64;

  DecodeScratch() = default;
  // OutOfMemory past the device's limit. Queues the counters' clearing on `stream`.
  DecodeScratch(Device& device, const AttentionShape& shape, cudaStream_t stream);

  float* partials() const { return reinterpret_cast<float*>(buffer_.data()); }
  unsigned* counters() const { return reinterpret_cast<unsigned*>(buffer_.data() + counters_offset_); }
  std::size_t bytes() const { return buffer_.size(); }
  // The shape it was made for: decode_attention refuses another.
  const AttentionShape& shape() const { return shape_; }

  static std::size_t bytes_for(const AttentionShape& shape);

 private:
  Buffer buffer_;
  std::size_t counters_offset_ = 0;
  AttentionShape shape_;
};

// One query row (a decode step) at position `position`: keys 0 .. position.
// With `position_at` (device memory), the kernel reads the position there
// when it runs and splits the keys as decode_splits(that position) does, in
// a grid sized for the cache's last position: one launch captured in a CUDA
// graph serves every later position, with the logits a launch would give.
void decode_attention(const void* q, std::size_t position, const KVLayer& cache, const AttentionShape& shape,
                      void* out, const DecodeScratch& scratch, cudaStream_t stream,
                      const std::int32_t* position_at = nullptr);

// How many blocks share one key/value head's keys in a decode step at
// `position` (flash-decoding's splits): two blocks per multiprocessor of
// the current GPU, none with fewer than 64 keys unless there is one, none
// empty, at most DecodeScratch::kMaxSplits.
std::size_t decode_splits(std::size_t position, const AttentionShape& shape);

// `rows` query rows at positions first .. first + rows - 1 (a prompt chunk),
// in tiles of 32 query rows against 32 keys at a time (FlashAttention's
// loop, on the CUDA cores: scores and sums in f32).
void prefill_attention(const void* q, std::size_t rows, std::size_t first, const KVLayer& cache,
                       const AttentionShape& shape, void* out, cudaStream_t stream);

}  // namespace nuvec::lm::gpu
