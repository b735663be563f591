// RoPE (ops.h): one thread per rotated pair (head h, frequency i) of one row
// (blockIdx.y), its angle computed where it is used.
#include "lm_cuda/element.cuh"
#include "lm_cuda/launch.h"

namespace nuvec::lm::gpu {
namespace {

constexpr int kThreads = 128;

template <class T, bool kInterleaved>
__global__ void rope_kernel(T* x, std::size_t row_stride, int heads, int head_dim, const float* inv_freq,
                            std::size_t first, const std::int32_t* first_at) {
  const int half = head_dim / 2;
  const int pair = blockIdx.x * kThreads + threadIdx.x;
  if (pair >= heads * half) return;
  const int h = pair / half, i = pair % half;
  // As rope::angles: the position as f32 times the frequency, in f32.
  const std::size_t base = first_at != nullptr ? static_cast<std::size_t>(*first_at) : first;
  const float angle = static_cast<float>(base + blockIdx.y) * inv_freq[i];
  float s, c;
  sincosf(angle, &s, &c);
  T* v = x + blockIdx.y * row_stride + static_cast<std::size_t>(h) * head_dim;
  const int a = kInterleaved ? 2 * i : i;
  const int b = kInterleaved ? 2 * i + 1 : i + half;
  const float x1 = to_f32(v[a]), x2 = to_f32(v[b]);
  v[a] = from_f32<T>(x1 * c - x2 * s);
  v[b] = from_f32<T>(x2 * c + x1 * s);
}

}  // namespace

void launch_rope(void* x, int rows, std::size_t row_stride, int heads, int head_dim, const float* inv_freq,
                 std::size_t first, const std::int32_t* first_at, bool interleaved, Element element,
                 cudaStream_t stream) {
  const int pairs = heads * (head_dim / 2);
  const dim3 grid(static_cast<unsigned>((pairs + kThreads - 1) / kThreads), static_cast<unsigned>(rows));
  with_element(element, [&](auto e) {
    using T = decltype(e);
    T* xt = static_cast<T*>(x);
    if (interleaved) {
      rope_kernel<T, true><<<grid, kThreads, 0, stream>>>(xt, row_stride, heads, head_dim, inv_freq, first, first_at);
    } else {
      rope_kernel<T, false><<<grid, kThreads, 0, stream>>>(xt, row_stride, heads, head_dim, inv_freq, first, first_at);
    }
  });
  check_launch("rope_kernel");
}

}  // namespace nuvec::lm::gpu
