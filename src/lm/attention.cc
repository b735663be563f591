#include "lm/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lm/attention_kernels.h"
#include "lm/kernels/thread_pool.h"
#include "nuvec/error.h"

namespace nuvec::lm::attention {

std::size_t scratch_floats(const Shape& shape) {
  const std::size_t v = kQueryRows * (shape.heads / shape.kv_heads);
  const std::size_t hd = shape.head_dim;
  // Queries, scores, weighted sums, then per query: maximum, sum,
  // correction, and two key bounds (32-bit, one float slot each); then the
  // AMX path's bf16 queries (half a float each), its key and value tiles
  // (32 * hd words each), two tiles of probabilities (512 floats' worth) and
  // 16 rows of P·V.
  return v * (2 * hd + kKeys + 5) + (v * hd + 1) / 2 + 80 * hd + 512;
}

namespace {

using Tile = void (*)(const detail::TileTask&);

void run_tiles(Tile tile, const float* q, std::size_t rows, std::size_t first, const KVCache& cache,
               std::size_t layer, const Shape& shape, float* out, float* scratch) {
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
    if (cache.is_f16()) {
      task.keys_f16 = cache.keys_f16(layer, task.g);
      task.values_f16 = cache.values_f16(layer, task.g);
    } else {
      task.keys_t = cache.keys(layer, task.g);
      task.values = cache.values(layer, task.g);
    }
    task.scratch = scratch + static_cast<std::size_t>(slot) * block;
    tile(task);
  });
}

}  // namespace

void attend(const float* q, std::size_t rows, std::size_t first, const KVCache& cache, std::size_t layer,
            const Shape& shape, float* out, float* scratch, kernels::Precision precision) {
  attend_with(kernels::best_isa(), q, rows, first, cache, layer, shape, out, scratch, precision);
}

void attend_with(kernels::Isa isa, const float* q, std::size_t rows, std::size_t first, const KVCache& cache,
                 std::size_t layer, const Shape& shape, float* out, float* scratch, kernels::Precision precision) {
  kernels::require_isa(isa, "attend_with");
  Tile tile = detail::attend_tile_portable;
  if (isa == kernels::Isa::avx2) tile = detail::attend_tile_avx2;
  // Every level from AVX-512 up (avx512bf16, amx) has its instructions.
  if (static_cast<int>(isa) >= static_cast<int>(kernels::Isa::avx512)) tile = detail::attend_tile_avx512;
  // The tile unit pays for prompts, not for a decode step's few rows; it
  // packs f32 keys and values only (an f16 cache runs on AVX-512).
  if (isa == kernels::Isa::amx && precision == kernels::Precision::fast && rows >= kQueryRows &&
      shape.head_dim % 32 == 0 && !cache.is_f16())
    tile = detail::attend_tile_amx;
  run_tiles(tile, q, rows, first, cache, layer, shape, out, scratch);
}

void attend_on_software_tiles(const float* q, std::size_t rows, std::size_t first, const KVCache& cache,
                              std::size_t layer, const Shape& shape, float* out, float* scratch) {
  if (cache.is_f16()) throw InvalidArgument("the software AMX tiles read f32 KV caches only");
  kernels::require_isa(kernels::Isa::avx512bf16, "attend_on_software_tiles");
  run_tiles(detail::attend_tile_amx_software, q, rows, first, cache, layer, shape, out, scratch);
}

}  // namespace nuvec::lm::attention
