// Attention tiles for AVX2 + FMA: 8 lanes (attention_tile.inc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "lm/attention_kernels.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#elif defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#endif

#define NUVEC_LANES 8
namespace nuvec::lm::attention::detail {
#include "lm/attention_tile.inc"

void attend_tile_avx2(const TileTask& task) { attend_tile(task); }

}  // namespace nuvec::lm::attention::detail

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#elif defined(__clang__)
#pragma clang attribute pop
#endif
