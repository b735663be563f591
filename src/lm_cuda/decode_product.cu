// The decode products (decode_product.h): a block of kWarps warps, a warp
// per output row (two for large launches). Each warp walks its weight rows
// in 16-byte pieces, lane l taking pieces l, l + 32, ..., kInFlight at a
// time, the next round's loads issued before this round's are used; its
// first loads go out before the block copies x (k elements, 16 bytes a
// thread) to shared memory, so that the two overlap. The weights are
// read once per step, so they are loaded as streaming (__ldcs: evict first),
// leaving L2 to x, the KV cache and the activations.
#include <type_traits>

#include "lm_cuda/element.cuh"
#include "lm_cuda/launch.h"
#include "lm_cuda/warp_reduce.cuh"

namespace nuvec::lm::gpu {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kInFlight = 4;  // 16-byte loads a lane has in flight per row

// The f32 sum of the products of 8 elements of w and of x.
template <class T>
__device__ __forceinline__ float dot8(const uint4& w, const uint4& x) {
  const T* a = reinterpret_cast<const T*>(&w);
  const T* b = reinterpret_cast<const T*>(&x);
  float s = 0;
#pragma unroll
  for (int u = 0; u < 8; ++u) s = fmaf(to_f32(a[u]), to_f32(b[u]), s);
  return s;
}

// x · each of kRows weight rows, the rows' pieces (8 elements each) split
// among the warp's lanes, every lane getting the sums. The first loads are
// issued before x is in shared memory (stage_x), so that the block's copy
// of x and the weights' first reads overlap.
template <class T, int kRows>
__device__ __forceinline__ void rows_dot(const uint4* const (&rows)[kRows], const void* x, int pieces,
                                         float (&sums)[kRows]) {
  extern __shared__ uint4 sx[];
  const int lane = threadIdx.x % 32;
  uint4 w[kRows][kInFlight];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      const int c = lane + 32 * j;
      if (rows[r] != nullptr && c < pieces) w[r][j] = __ldcs(rows[r] + c);
    }
  }
  const uint4* from = static_cast<const uint4*>(x);
  for (int i = threadIdx.x; i < pieces; i += kThreads) sx[i] = from[i];
  __syncthreads();
  if (rows[0] == nullptr) return;  // past the last output (after the barrier every thread takes)

  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0;
  for (int c0 = 0; c0 < pieces; c0 += 32 * kInFlight) {
    // Use this round's pieces while the next round's are read.
    uint4 next[kRows][kInFlight];
    const bool more = c0 + 32 * kInFlight < pieces;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) {
        const int c = c0 + 32 * kInFlight + lane + 32 * j;
        if (more && c < pieces) next[r][j] = __ldcs(rows[r] + c);
      }
    }
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      const int c = c0 + lane + 32 * j;
      if (c < pieces) {
        const uint4 xc = sx[c];
#pragma unroll
        for (int r = 0; r < kRows; ++r) acc[r] += dot8<T>(w[r][j], xc);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) w[r][j] = next[r][j];
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) sums[r] = warp_sum(acc[r]);
}

__device__ __forceinline__ void store(float* y, int i, float v) { y[i] = v; }
template <class T>
__device__ __forceinline__ void store(T* y, int i, float v) {
  y[i] = from_f32<T>(v);
}

// Where output `row` of the launch lies: its product and its row there.
__device__ __forceinline__ int product_of(const DecodeProductLaunch& p, int row, int& r) {
  int i = 0;
  while (row >= p.end[i]) ++i;
  r = row - (i == 0 ? 0 : p.end[i - 1]);
  return i;
}

// Warp w of block b takes outputs (b * kWarps + w) * kRows .. + kRows - 1.
template <class T, class Y, int kRows>
__global__ void __launch_bounds__(kThreads) decode_products_kernel(const void* x, DecodeProductLaunch p) {
  const int first = (blockIdx.x * kWarps + threadIdx.x / 32) * kRows;
  const int total = p.end[p.count - 1];
  const uint4* rows[kRows];
  int product[kRows], at[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    rows[r] = nullptr;
    product[r] = 0;
    at[r] = 0;
    if (first + r < total) {
      product[r] = product_of(p, first + r, at[r]);
      rows[r] = reinterpret_cast<const uint4*>(static_cast<const T*>(p.w[product[r]]) +
                                               static_cast<std::size_t>(at[r]) * p.k);
    }
  }
  // A warp's last rows past the end read its first one again, unused.
#pragma unroll
  for (int r = 1; r < kRows; ++r) {
    if (rows[r] == nullptr) rows[r] = rows[0];
  }
  float sums[kRows];
  rows_dot<T, kRows>(rows, x, p.k / 8, sums);
  if (rows[0] == nullptr || threadIdx.x % 32 != 0) return;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (first + r >= total) break;
    float v = sums[r];
    const int i = product[r];
    if (p.bias[i] != nullptr) v += to_f32(static_cast<const T*>(p.bias[i])[at[r]]);
    store(static_cast<Y*>(p.y[i]), at[r], v);
  }
}

// As swiglu.cu's kernel, on g and u rounded to T as the two products'
// outputs would be: a warp per output, its gate and up rows side by side.
template <class T>
__global__ void __launch_bounds__(kThreads) decode_swiglu_kernel(const void* x, DecodeProductLaunch p) {
  const int out = blockIdx.x * kWarps + threadIdx.x / 32;
  const uint4* rows[2] = {nullptr, nullptr};
  if (out < p.end[0]) {
    const std::size_t at = static_cast<std::size_t>(out) * p.k;
    rows[0] = reinterpret_cast<const uint4*>(static_cast<const T*>(p.w[0]) + at);
    rows[1] = reinterpret_cast<const uint4*>(static_cast<const T*>(p.w[1]) + at);
  }
  float sums[2];
  rows_dot<T, 2>(rows, x, p.k / 8, sums);
  if (rows[0] == nullptr || threadIdx.x % 32 != 0) return;
  float g = sums[0], u = sums[1];
  if (p.bias[0] != nullptr) g += to_f32(static_cast<const T*>(p.bias[0])[out]);
  if (p.bias[1] != nullptr) u += to_f32(static_cast<const T*>(p.bias[1])[out]);
  g = to_f32(from_f32<T>(g));
  u = to_f32(from_f32<T>(u));
  static_cast<T*>(p.y[0])[out] = from_f32<T>(g / (1.0f + expf(-g)) * u);
}

unsigned blocks_for(int outputs, int per_warp) {
  const int per_block = kWarps * per_warp;
  return static_cast<unsigned>((outputs + per_block - 1) / per_block);
}

// Two rows a warp once there are enough outputs to fill the GPU with half as
// many warps (a 7B layer's products), which halves the reads of x from
// shared memory and doubles a lane's loads in flight; one below (a 1.1B
// layer's 2048 outputs would leave multiprocessors idle).
constexpr int kTwoRowsFrom = 8192;

}  // namespace

void launch_decode_products(const void* x, const DecodeProductLaunch& p, bool y_f32, Element element,
                            cudaStream_t stream) {
  const int total = p.end[p.count - 1];
  const std::size_t shared = static_cast<std::size_t>(p.k) * 2;
  with_element(element, [&](auto e) {
    using T = decltype(e);
    const auto run = [&](auto y, auto rows) {
      using Y = decltype(y);
      constexpr int kRows = decltype(rows)::value;
      decode_products_kernel<T, Y, kRows><<<blocks_for(total, kRows), kThreads, shared, stream>>>(x, p);
    };
    if (y_f32) {
      if (total >= kTwoRowsFrom) run(float{}, std::integral_constant<int, 2>{});
      else run(float{}, std::integral_constant<int, 1>{});
    } else {
      if (total >= kTwoRowsFrom) run(T{}, std::integral_constant<int, 2>{});
      else run(T{}, std::integral_constant<int, 1>{});
    }
  });
  check_launch("decode_products_kernel");
}

void launch_decode_swiglu_product(const void* x, const DecodeProductLaunch& p, Element element, cudaStream_t stream) {
  const std::size_t shared = static_cast<std::size_t>(p.k) * 2;
  with_element(element, [&](auto e) {
    using T = decltype(e);
    decode_swiglu_kernel<T><<<blocks_for(p.end[0], 1), kThreads, shared, stream>>>(x, p);
  });
  check_launch("decode_swiglu_kernel");
}

}  // namespace nuvec::lm::gpu
