// RMSNorm (ops.h): one block per row. A row (the hidden size, a few thousand
// elements) is read twice, the second time from L1/L2, so it is never held
// in shared memory.
#include "lm_cuda/element.cuh"
#include "lm_cuda/launch.h"
#include "lm_cuda/warp_reduce.cuh"

namespace nuvec::lm::gpu {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void rms_norm_kernel(const T* x, int dim, const T* weight, float eps, T* out) {
  const T* xr = x + static_cast<std::size_t>(blockIdx.x) * dim;
  T* yr = out + static_cast<std::size_t>(blockIdx.x) * dim;
  float sum = 0;
  for (int i = threadIdx.x; i < dim; i += kThreads) {
    const float v = to_f32(xr[i]);
    sum += v * v;
  }
  // sqrtf and the division are correctly rounded (rsqrtf is not), as the
  // CPU's 1 / sqrt is.
  const float inv = 1.0f / sqrtf(block_sum<kThreads>(sum) / static_cast<float>(dim) + eps);
  // The CPU's order: weight * (x * inv). In place is fine: each thread
  // writes only the elements it alone reads.
  for (int i = threadIdx.x; i < dim; i += kThreads) yr[i] = from_f32<T>(to_f32(weight[i]) * (to_f32(xr[i]) * inv));
}

}  // namespace

void launch_rms_norm(const void* x, int rows, int dim, const void* weight, float eps, void* out, Element element,
                     cudaStream_t stream) {
  with_element(element, [&](auto e) {
    using T = decltype(e);
    rms_norm_kernel<T><<<rows, kThreads, 0, stream>>>(static_cast<const T*>(x), dim, static_cast<const T*>(weight),
                                                      eps, static_cast<T*>(out));
  });
  check_launch("rms_norm_kernel");
}

}  // namespace nuvec::lm::gpu
