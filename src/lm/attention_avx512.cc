// Attention tiles for AVX-512: 16 lanes (attention_tile.inc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "lm/attention_kernels.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")
#elif defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)
#endif

#define NUVEC_LANES 16
namespace nuvec::lm::attention::detail {
#include "lm/attention_tile.inc"

void attend_tile_avx512(const TileTask& task) { attend_tile(task); }

}  // namespace nuvec::lm::attention::detail

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#elif defined(__clang__)
#pragma clang attribute pop
#endif
