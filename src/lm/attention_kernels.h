// The per-instruction-set attention kernels behind attention::attend(): one
// task is one key/value head (with the query heads that share it) for one
// tile of query rows. Each attention_<isa>.cc compiles attention_tile.inc
// for its target; attend() picks one with kernels::best_isa(). Unchecked:
// only attention.cc calls these, after kernels::require_isa().
#pragma once

#include <cstddef>
#include <cstdint>

#include "lm/attention.h"

namespace nuvec::lm::attention::detail {

struct TileTask {
  const float* q;          // all query rows, [rows][q_stride]
  float* out;              // [rows][q_stride]
  std::size_t q_stride;    // heads * head_dim
  std::size_t r0, r1;      // the tile's rows
  std::size_t first;       // position of row 0
  std::size_t g;           // the key/value head
  std::size_t group;       // query heads per key/value head
  std::size_t head_dim;
  std::size_t window;      // 0: none
  const float* keys_t;     // this head's keys, [head_dim][key_stride]; null for an f16 cache
  std::size_t key_stride;  // a multiple of kKeys
  const float* values;     // this head's values, [positions][head_dim]; null for an f16 cache
  const std::uint16_t* keys_f16;    // the same for an f16 cache (f16 bits); null for an f32 one
  const std::uint16_t* values_f16;
  float scale;             // 1 / sqrt(head_dim)
  float* scratch;          // this thread's block of scratch_floats()
  std::size_t max_vectors; // kQueryRows * group: what the scratch is laid out for
};

void attend_tile_portable(const TileTask& task);
void attend_tile_avx2(const TileTask& task);
void attend_tile_avx512(const TileTask& task);
// The AMX tiles read f32 caches only (attend() falls back to AVX-512 for f16).
void attend_tile_amx(const TileTask& task);
void attend_tile_amx_software(const TileTask& task);

}  // namespace nuvec::lm::attention::detail
