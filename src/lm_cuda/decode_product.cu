// The decode products (decode_product.h): a block of kWarps warps, a warp
// per output row. The block first copies x (k elements, 16 bytes a thread
// at a time) to shared memory; each warp then walks its weight row in
// 16-byte pieces, lane l taking pieces l, l + 32, ..., four at a time so
// that four loads are in flight before the first is used. The weights are
// read once per step, so they are loaded as streaming (__ldcs: evict first),
// leaving L2 to x, the KV cache and the activations.
#include "lm_cuda/element.cuh"
#include "lm_cuda/launch.h"
#include "lm_cuda/warp_reduce.cuh"

namespace nuvec::lm::gpu {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;

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

// x · row, the row's pieces (8 elements each) split among the warp's lanes;
// every lane gets the sum.
template <class T>
__device__ __forceinline__ float row_dot(const uint4* row, const uint4* sx, int pieces, int lane) {
  float acc = 0;
  int c = lane;
  for (; c + 96 < pieces; c += 128) {
    const uint4 w0 = __ldcs(row + c), w1 = __ldcs(row + c + 32), w2 = __ldcs(row + c + 64),
                w3 = __ldcs(row + c + 96);
    acc += dot8<T>(w0, sx[c]) + dot8<T>(w1, sx[c + 32]) + dot8<T>(w2, sx[c + 64]) + dot8<T>(w3, sx[c + 96]);
  }
  for (; c < pieces; c += 32) acc += dot8<T>(__ldcs(row + c), sx[c]);
  return warp_sum(acc);
}

__device__ __forceinline__ void store(float* y, int i, float v) { y[i] = v; }
template <class T>
__device__ __forceinline__ void store(T* y, int i, float v) {
  y[i] = from_f32<T>(v);
}

template <class T>
__device__ __forceinline__ const uint4* load_x(const void* x, int pieces) {
  extern __shared__ uint4 sx[];
  const uint4* from = static_cast<const uint4*>(x);
  for (int i = threadIdx.x; i < pieces; i += kThreads) sx[i] = from[i];
  __syncthreads();
  return sx;
}

template <class T, class Y>
__global__ void __launch_bounds__(kThreads) decode_products_kernel(const void* x, DecodeProductLaunch p) {
  const int pieces = p.k / 8;
  const uint4* sx = load_x<T>(x, pieces);
  const int row = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= p.end[p.count - 1]) return;
  int i = 0;
  while (row >= p.end[i]) ++i;
  const int r = row - (i == 0 ? 0 : p.end[i - 1]);
  const auto* w = static_cast<const T*>(p.w[i]) + static_cast<std::size_t>(r) * p.k;
  float sum = row_dot<T>(reinterpret_cast<const uint4*>(w), sx, pieces, lane);
  if (lane == 0) {
    if (p.bias[i] != nullptr) sum += to_f32(static_cast<const T*>(p.bias[i])[r]);
    store(static_cast<Y*>(p.y[i]), r, sum);
  }
}

// As swiglu.cu's kernel, on g and u rounded to T as the two products'
// outputs would be.
template <class T>
__global__ void __launch_bounds__(kThreads) decode_swiglu_kernel(const void* x, DecodeProductLaunch p) {
  const int pieces = p.k / 8;
  const uint4* sx = load_x<T>(x, pieces);
  const int r = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (r >= p.end[0]) return;
  const std::size_t at = static_cast<std::size_t>(r) * p.k;
  float g = row_dot<T>(reinterpret_cast<const uint4*>(static_cast<const T*>(p.w[0]) + at), sx, pieces, lane);
  float u = row_dot<T>(reinterpret_cast<const uint4*>(static_cast<const T*>(p.w[1]) + at), sx, pieces, lane);
  if (lane == 0) {
    if (p.bias[0] != nullptr) g += to_f32(static_cast<const T*>(p.bias[0])[r]);
    if (p.bias[1] != nullptr) u += to_f32(static_cast<const T*>(p.bias[1])[r]);
    g = to_f32(from_f32<T>(g));
    u = to_f32(from_f32<T>(u));
    static_cast<T*>(p.y[0])[r] = from_f32<T>(g / (1.0f + expf(-g)) * u);
  }
}

unsigned blocks_for(int rows) { return static_cast<unsigned>((rows + kWarps - 1) / kWarps); }

}  // namespace

void launch_decode_products(const void* x, const DecodeProductLaunch& p, bool y_f32, Element element,
                            cudaStream_t stream) {
  const unsigned blocks = blocks_for(p.end[p.count - 1]);
  const std::size_t shared = static_cast<std::size_t>(p.k) * 2;
  with_element(element, [&](auto e) {
    using T = decltype(e);
    if (y_f32) {
      decode_products_kernel<T, float><<<blocks, kThreads, shared, stream>>>(x, p);
    } else {
      decode_products_kernel<T, T><<<blocks, kThreads, shared, stream>>>(x, p);
    }
  });
  check_launch("decode_products_kernel");
}

void launch_decode_swiglu_product(const void* x, const DecodeProductLaunch& p, Element element, cudaStream_t stream) {
  const std::size_t shared = static_cast<std::size_t>(p.k) * 2;
  with_element(element, [&](auto e) {
    using T = decltype(e);
    decode_swiglu_kernel<T><<<blocks_for(p.end[0]), kThreads, shared, stream>>>(x, p);
  });
  check_launch("decode_swiglu_kernel");
}

}  // namespace nuvec::lm::gpu
