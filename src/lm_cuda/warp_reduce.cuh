// Sums and maxima across a warp's 32 lanes, every lane getting the result,
// and a block's sum built on them.
#pragma once

namespace nuvec::lm::gpu {

__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// The sum of `x` over a block of kThreads threads (a multiple of 32), every
// thread getting it: each warp's by shuffles, then the warps' added in warp
// order by one thread, so the result is the same on every run. Once per
// kernel: its shared memory is not fenced for a second call.
template <int kThreads>
__device__ __forceinline__ float block_sum(float x) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024);
  x = warp_sum(x);
  __shared__ float warp_sums[kThreads / 32];
  __shared__ float total;
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0;
    for (int w = 0; w < kThreads / 32; ++w) t += warp_sums[w];
    total = t;
  }
  __syncthreads();
  return total;
}

}  // namespace nuvec::lm::gpu
