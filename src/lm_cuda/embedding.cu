// The embedding gather (ops::embedding): one block per token row, each
// thread converting a strided part of the row to f32. Exact: every f16 and
// bf16 value is an f32 value.
#include "lm_cuda/launch.h"
#include "lm_cuda/stored.cuh"

namespace nuvec::lm::gpu {
namespace {

constexpr int kThreads = 256;

template <class W>
__global__ void embedding_kernel(const W* table, int hidden, const std::int32_t* tokens, std::int32_t token,
                                 float* out) {
  const std::int32_t id = tokens != nullptr ? tokens[blockIdx.x] : token;
  const W* row = table + static_cast<std::size_t>(id) * hidden;
  float* y = out + static_cast<std::size_t>(blockIdx.x) * hidden;
  for (int i = threadIdx.x; i < hidden; i += kThreads) y[i] = stored_f32(row[i]);
}

}  // namespace

void launch_embedding(const void* table, Stored stored, int hidden, const std::int32_t* tokens, std::int32_t token,
                      int rows, float* out, cudaStream_t stream) {
  with_stored(stored, [&](auto w) {
    using W = decltype(w);
    embedding_kernel<W><<<rows, kThreads, 0, stream>>>(static_cast<const W*>(table), hidden, tokens, token, out);
  });
  check_launch("embedding_kernel");
}

}  // namespace nuvec::lm::gpu
