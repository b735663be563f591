#include "lm/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lm/attention_kernels.h"
#include "lm/kernels/thread_pool.h"

namespace nuvec::lm::attention {

std::size_t scratch_floats(const Shape& shape) {
  const std::size_t v = kQueryRows * (shape.heads / shape.kv_heads);
  // Queries, scores, weighted sums, then per query: maximum, sum,
  // correction, and two key bounds (32-bit, one float slot each).
  return v * (2 * shape.head_dim + kKeys + 5);
}

void attend(const float* q, std::size_t rows, std::size_t first, const KVCache& cache, std::size_t layer,
            const Shape& shape, float* out, float* scratch) {
  attend_with(kernels::best_isa(), q, rows, first, cache, layer, shape, out, scratch);
}

void attend_with(kernels::Isa isa, const float* q, std::size_t rows, std::size_t first, const KVCache& cache,
                 std::size_t layer, const Shape& shape, float* out, float* scratch) {
  void (*tile)(const detail::TileTask&) = detail::attend_tile_portable;
  if (isa == kernels::Isa::avx2) tile = detail::attend_tile_avx2;
  // Every level from AVX-512 up (avx512bf16, amx) has its instructions.
  if (static_cast<int>(isa) >= static_cast<int>(kernels::Isa::avx512)) tile = detail::attend_tile_avx512;

  const std::size_t group = shape.heads / shape.kv_heads;
  const std::size_t row_tiles = (rows + kQueryRows - 1) / kQueryRows;
  const std::size_t block = scratch_floats(shape);
  detail::TileTask base{};
  base.q = q;
  base.out = out;
  base.q_stride = shape.heads * shape.head_dim;
  base.first = first;
  base.group = group;
  base.head_dim = shape.head_dim;
  base.window = shape.window;
  base.key_stride = cache.key_stride();
  base.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  base.max_vectors = kQueryRows * group;

  // One task: one key/value head (and the query heads that share it) for
  // one tile of query rows, so each key tile loaded serves them all.
  kernels::parallel_for(shape.kv_heads * row_tiles, [&](std::size_t index, int slot) {
    detail::TileTask task = base;
    task.g = index % shape.kv_heads;
    task.r0 = (index / shape.kv_heads) * kQueryRows;
    task.r1 = std::min(rows, task.r0 + kQueryRows);
    task.keys_t = cache.keys(layer, task.g);
    task.values = cache.values(layer, task.g);
    task.scratch = scratch + static_cast<std::size_t>(slot) * block;
    tile(task);
  });
}

}  // namespace nuvec::lm::attention
