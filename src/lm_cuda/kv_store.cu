// The KV cache's store (kv_layout.h): block (row, key/value head) copies
// one head's row of k and of v to its place.
#include "lm_cuda/element.cuh"
#include "lm_cuda/launch.h"

namespace nuvec::lm::gpu {
namespace {

constexpr int kThreads = 128;

template <class T>
__global__ void kv_store_kernel(T* keys, T* values, std::size_t capacity, int head_dim, std::size_t first,
                                const std::int32_t* first_at, const T* k, const T* v) {
  const std::size_t row = blockIdx.x, head = blockIdx.y;
  if (first_at != nullptr) first = static_cast<std::size_t>(*first_at);
  const std::size_t src = (row * gridDim.y + head) * head_dim;
  const std::size_t dst = (head * capacity + first + row) * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += kThreads) {
    keys[dst + d] = k[src + d];
    values[dst + d] = v[src + d];
  }
}

}  // namespace

void launch_kv_store(void* keys, void* values, std::size_t capacity, int kv_heads, int head_dim, std::size_t first,
                     const std::int32_t* first_at, int rows, const void* k, const void* v, Element element,
                     cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(kv_heads));
  with_element(element, [&](auto e) {
    using T = decltype(e);
    kv_store_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(keys), static_cast<T*>(values), capacity,
                                                      head_dim, first, first_at, static_cast<const T*>(k),
                                                      static_cast<const T*>(v));
  });
  check_launch("kv_store_kernel");
}

}  // namespace nuvec::lm::gpu
