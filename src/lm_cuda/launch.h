// The kernels' launchers: what the .cu files define and the layer's .cc files
// call once they have checked their arguments (sizes here fit the kernels'
// ints). C++17 and the CUDA runtime only: nvcc compiles the .cu files as
// C++17 (CMake 3.25 has no C++20 flag for nvcc, and nuvec's headers need
// C++20), and keeping nuvec's headers out of them keeps nvcc's compile short.
#pragma once

#include <cstddef>

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
void launch_rope(void* x, int rows, std::size_t row_stride, int heads, int head_dim, const float* inv_freq,
                 std::size_t first, bool interleaved, Element element, cudaStream_t stream);
void launch_swiglu(const void* gate, const void* up, void* out, std::size_t count, Element element,
                   cudaStream_t stream);
void launch_kv_store(void* keys, void* values, std::size_t capacity, int kv_heads, int head_dim, std::size_t first,
                     int rows, const void* k, const void* v, Element element, cudaStream_t stream);

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
  int begin;             // the first visible position
  int count;             // visible positions
  int per_split;         // positions per split (the last may have fewer)
  int splits;
  int max_splits;  // the scratch's room per head
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

}  // namespace nuvec::lm::gpu
