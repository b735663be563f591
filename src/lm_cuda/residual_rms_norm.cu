// The residual add fused into the RMSNorm that follows it (ops::add, then
// ops::rms_norm): one block per row reads the f32 residual and the
// sublayer's output once, writes the new residual, and normalizes it into
// the next products' input. Fusing saves a pass over the residual per
// sublayer; the arithmetic is the CPU's, in its order.
#include "lm_cuda/element.cuh"
#include "lm_cuda/launch.h"
#include "lm_cuda/stored.cuh"
#include "lm_cuda/warp_reduce.cuh"

namespace nuvec::lm::gpu {
namespace {

constexpr int kThreads = 256;

template <class T, class W>
__global__ void residual_rms_norm_kernel(float* residual, const T* delta, int dim, const W* weight, float eps,
                                         T* out) {
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * dim;
  float* x = residual + base;
  float sum = 0;
  for (int i = threadIdx.x; i < dim; i += kThreads) {
    float v = x[i];
    if (delta != nullptr) {
      v += to_f32(delta[base + i]);
      x[i] = v;
    }
    sum += v * v;
  }
  // sqrtf and the division are correctly rounded, as the CPU's 1 / sqrt is.
  const float inv = 1.0f / sqrtf(block_sum<kThreads>(sum) / static_cast<float>(dim) + eps);
  // Each thread reads back only the residual elements it wrote itself.
  T* y = out + base;
  for (int i = threadIdx.x; i < dim; i += kThreads) y[i] = from_f32<T>(stored_f32(weight[i]) * (x[i] * inv));
}

}  // namespace

void launch_residual_rms_norm(float* residual, const void* delta, int rows, int dim, const void* weight,
                              Stored weight_type, float eps, void* out, Element element, cudaStream_t stream) {
  with_element(element, [&](auto e) {
    using T = decltype(e);
    with_stored(weight_type, [&](auto w) {
      using W = decltype(w);
      residual_rms_norm_kernel<T, W><<<rows, kThreads, 0, stream>>>(
          residual, static_cast<const T*>(delta), dim, static_cast<const W*>(weight), eps, static_cast<T*>(out));
    });
  });
  check_launch("residual_rms_norm_kernel");
}

}  // namespace nuvec::lm::gpu
