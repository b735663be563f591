// SwiGLU (ops.h): element-wise, a grid of at most kMaxBlocks blocks each
// thread of which takes every grid-th element.
#include <algorithm>

#include "lm_cuda/element.cuh"
#include "lm_cuda/launch.h"

namespace nuvec::lm::gpu {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill an H200 several times over.
constexpr std::size_t kMaxBlocks = 4096;

template <class T>
__global__ void swiglu_kernel(const T* gate, const T* up, T* out, std::size_t count) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * kThreads;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x; i < count; i += step) {
    const float g = to_f32(gate[i]);
    out[i] = from_f32<T>(g / (1.0f + expf(-g)) * to_f32(up[i]));
  }
}

}  // namespace

void launch_swiglu(const void* gate, const void* up, void* out, std::size_t count, Element element,
                   cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min(kMaxBlocks, (count + kThreads - 1) / kThreads));
  with_element(element, [&](auto e) {
    using T = decltype(e);
    swiglu_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(gate), static_cast<const T*>(up),
                                                      static_cast<T*>(out), count);
  });
  check_launch("swiglu_kernel");
}

}  // namespace nuvec::lm::gpu
