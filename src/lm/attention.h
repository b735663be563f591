// Grouped-query causal attention over the KV cache, computed in tiles with
// an online softmax (as FlashAttention does): a tile of query rows meets the
// keys one tile at a time, keeping only a running maximum, a running sum and
// a running weighted sum per query. No [rows × positions] score matrix is
// ever held, so memory does not grow with the square of the prompt.
#pragma once

#include <cstddef>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/linear.h"  // Precision
#include "lm/kv_cache.h"

namespace nuvec::lm::attention {

struct Shape {
  std::size_t heads = 0;     // query heads
  std::size_t kv_heads = 0;  // key/value heads; heads / kv_heads queries share each
  std::size_t head_dim = 0;
  std::size_t window = 0;  // a query sees keys fewer than `window` positions back; 0: all
};

// Query rows per tile, and keys per tile.
inline constexpr std::size_t kQueryRows = 16;
inline constexpr std::size_t kKeys = 64;

// Floats of scratch one thread needs (a tile's queries, scores, running
// sums, and the bf16 tiles of the AMX path); attend() takes one such block
// per kernel thread.
std::size_t scratch_floats(const Shape& shape);

// out = softmax(q · Kᵀ / sqrt(head_dim), causal) · V for `rows` query rows
// at positions first .. first + rows - 1, whose keys and values the cache
// already holds. q and out are [rows][heads * head_dim] (q with RoPE
// applied). `scratch` holds kernels::threads() blocks of scratch_floats().
// On CPUs with AMX, chunks of at least kQueryRows rows with a head dimension
// that is a multiple of 32 run on the tile unit (attention_amx.cc: q, keys,
// values and probabilities rounded to bf16, sums in f32) unless `precision`
// is exact; everything else is f32 throughout. An f16 cache is widened to
// f32 as it is read (never on the tile unit).
void attend(const float* q, std::size_t rows, std::size_t first, const KVCache& cache, std::size_t layer,
            const Shape& shape, float* out, float* scratch,
            kernels::Precision precision = kernels::Precision::fast);
// The same with the kernels of `isa`: for tests that check every
// instruction set against the reference. InvalidArgument where
// !kernels::isa_allowed(isa).
void attend_with(kernels::Isa isa, const float* q, std::size_t rows, std::size_t first, const KVCache& cache,
                 std::size_t layer, const Shape& shape, float* out, float* scratch,
                 kernels::Precision precision = kernels::Precision::fast);
// The AMX path with the tile instructions done in software (any CPU with
// AVX512_BF16), so that its packing and masking are tested where the tile
// unit is absent; for any number of rows. f32 caches only, and AVX512_BF16
// allowed (InvalidArgument otherwise).
void attend_on_software_tiles(const float* q, std::size_t rows, std::size_t first, const KVCache& cache,
                              std::size_t layer, const Shape& shape, float* out, float* scratch);

}  // namespace nuvec::lm::attention
