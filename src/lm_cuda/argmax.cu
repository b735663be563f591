// Greedy sampling on the device: the index of the largest logit, so that a
// decode step reads back 4 bytes instead of the vocabulary's logits. One
// block: a vocabulary (32k-256k floats) is one pass of 1024 threads.
#include <cfloat>

#include "lm_cuda/launch.h"

namespace nuvec::lm::gpu {
namespace {

constexpr int kThreads = 1024;

// The better of two candidates: the larger value, the lower index on a tie
// (the first largest, as lm::argmax).
__device__ __forceinline__ void take_better(float& best, int& at, float v, int i) {
  if (v > best || (v == best && i < at)) {
    best = v;
    at = i;
  }
}

__global__ void argmax_kernel(const float* values, int n, std::int32_t* out) {
  float best = -FLT_MAX;
  int at = n;  // past the end: any value, even -FLT_MAX, beats it; NaNs never do (v > best is false)
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float v = values[i];
    if (v > best || (v == best && at == n)) {
      best = v;
      at = i;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float v = __shfl_xor_sync(0xffffffffu, best, offset);
    const int i = __shfl_xor_sync(0xffffffffu, at, offset);
    take_better(best, at, v, i);
  }
  __shared__ float warp_best[kThreads / 32];
  __shared__ int warp_at[kThreads / 32];
  if (threadIdx.x % 32 == 0) {
    warp_best[threadIdx.x / 32] = best;
    warp_at[threadIdx.x / 32] = at;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) take_better(best, at, warp_best[w], warp_at[w]);
    // Only NaNs (or nothing): 0, as a defined token, rather than an index past the vocabulary.
    *out = at < n ? at : 0;
  }
}

}  // namespace

void launch_argmax(const float* values, int n, std::int32_t* out, cudaStream_t stream) {
  argmax_kernel<<<1, kThreads, 0, stream>>>(values, n, out);
  check_launch("argmax_kernel");
}

}  // namespace nuvec::lm::gpu
