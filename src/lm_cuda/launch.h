// The kernels' launchers: what the .cu files define and the layer's .cc files
// call once they have checked their arguments (sizes here fit the kernels'
// ints). C++17 and the CUDA runtime only: nvcc compiles the .cu files as
// C++17 (CMake 3.25 has no C++20 flag for nvcc, and nuvec's headers need
// C++20), and keeping nuvec's headers out of them keeps nvcc's compile short.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace nuvec::lm::gpu {

// The element types the kernels are built for (DType f16 and bf16: check.h).
enum class Element { f16, bf16 };

// IoError if the last kernel launch was refused (a bad configuration, no
// GPU). Reads cudaGetLastError, which does not wait for the GPU: a fault
// inside a kernel shows at the stream's next synchronisation instead.
void check_launch(const char* kernel);

void launch_rms_norm(const void* x, int rows, int dim, const void* weight, float eps, void* out, Element element,
                     cudaStream_t stream);
// Where the kernels of a forward pass find the position of their first row:
// `first`, or, when `first_at` is not null, the int32 it points to in device
// memory, read as the kernel runs. A decode step replayed as a CUDA graph
// (gpu_session.cc) keeps the arguments it was captured with, so its
// position, which moves every step, comes from there.
void launch_rope(void* x, int rows, std::size_t row_stride, int heads, int head_dim, const float* inv_freq,
                 std::size_t first, const std::int32_t* first_at, bool interleaved, Element element,
                 cudaStream_t stream);
void launch_swiglu(const void* gate, const void* up, void* out, std::size_t count, Element element,
                   cudaStream_t stream);
void launch_kv_store(void* keys, void* values, std::size_t capacity, int kv_heads, int head_dim, std::size_t first,
                     const std::int32_t* first_at, int rows, const void* k, const void* v, Element element,
                     cudaStream_t stream);

// The largest head dimension and the most query heads per key/value head the
// attention kernels are built for (their registers are sized by them).
inline constexpr int kMaxHeadDim = 256;
inline constexpr int kMaxGroup = 16;

// Threads of a decode block, and so keys per tile (one key per thread).
inline constexpr int kDecodeThreads = 128;

struct DecodeLaunch {
  int kv_heads;
  int group;  // query heads per key/value head
  int head_dim;
  std::size_t capacity;  // positions per head in the cache
  // The query's position (keys up to it are visible), or where to read it
  // (first_at above); the kernel splits the visible keys from it, so that
  // a graph's replay sees the step's own.
  int position;
  const std::int32_t* position_at;
  int window;      // a query sees keys fewer than `window` positions back; 0: all
  // Blocks per key/value head: the kernel splits the visible keys into
  // contiguous shares as decode_splits does, from wanted_splits, min_keys
  // and max_splits (at most the scratch's room per head); grid_splits (the
  // grid's y) is at least that many, and the blocks past them return.
  int grid_splits;
  int wanted_splits;
  int min_keys;
  int max_splits;
  float scale;     // 1 / sqrt(head_dim)
};
// partials: kv_heads * max_splits * (2 * group + group * head_dim) floats;
// counters: kv_heads, zero before the launch and zero again after it.
void launch_decode_attention(const void* q, const void* keys, const void* values, void* out, const DecodeLaunch& p,
                             float* partials, unsigned* counters, Element element, cudaStream_t stream);

struct PrefillLaunch {
  int rows;
  int first;  // position of query row 0
  int heads;
  int group;
  int head_dim;
  std::size_t capacity;
  int window;  // 0: none
  float scale;
};
void launch_prefill_attention(const void* q, const void* keys, const void* values, void* out, const PrefillLaunch& p,
                              Element element, cudaStream_t stream);

// The products of a decode step (decode_product.h): rows end[0], end[1] -
// end[0], ... of `count` weights w[i] [rows][k], each output y[i][r] = x ·
// w[i][r] (+ bias[i][r]), y of the element type or f32. The SwiGLU launch
// reads w[0] (gate) and w[1] (up), with bias[0] and bias[1], into y[0].
inline constexpr int kMaxDecodeProducts = 3;
struct DecodeProductLaunch {
  const void* w[kMaxDecodeProducts];
  const void* bias[kMaxDecodeProducts];
  void* y[kMaxDecodeProducts];
  int end[kMaxDecodeProducts];
  int count;
  int k;  // a multiple of 8, at most kMaxDecodeProductK
};
void launch_decode_products(const void* x, const DecodeProductLaunch& p, bool y_f32, Element element,
                            cudaStream_t stream);
void launch_decode_swiglu_product(const void* x, const DecodeProductLaunch& p, Element element, cudaStream_t stream);

// How a weight the session reads element by element (a norm's, the
// embedding table) is stored: as the checkpoint has it, never converted.
enum class Stored { f32, f16, bf16 };

// out[r] = table[tokens[r]] as f32, for `rows` rows of `hidden` (the
// residual stream's first value). `tokens` is device memory; with rows == 1
// it may be null and `token` is the one row's id (a decode step's, passed by
// value so that the step copies nothing to the device).
void launch_embedding(const void* table, Stored stored, int hidden, const std::int32_t* tokens, std::int32_t token,
                      int rows, float* out, cudaStream_t stream);
// For each of `rows` rows of `dim`: residual += delta (of `element`; none
// when null), then out = rms_norm(residual) * weight rounded to `element`.
// The residual stream is f32 (gpu_session.cc says why).
void launch_residual_rms_norm(float* residual, const void* delta, int rows, int dim, const void* weight,
                              Stored weight_type, float eps, void* out, Element element, cudaStream_t stream);
// *out = the index of the first largest of n f32 values (lm::argmax's rule
// for finite values; a NaN is never taken).
void launch_argmax(const float* values, int n, std::int32_t* out, cudaStream_t stream);

}  // namespace nuvec::lm::gpu
