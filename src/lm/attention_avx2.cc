// Attention tiles for AVX2 + FMA: 8 lanes (attention_tile.inc).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "lm/attention_kernels.h"

#define NUVEC_ISA_TARGET "avx2,fma,f16c"
#include "lm/kernels/isa_target_begin.inc"

#define NUVEC_LANES 8
#define NUVEC_LOAD_HALVES(p) (F) _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))
namespace nuvec::lm::attention::detail {
#include "lm/attention_tile.inc"

void attend_tile_avx2(const TileTask& task) { attend_tile_either(task); }

}  // namespace nuvec::lm::attention::detail

#include "lm/kernels/isa_target_end.inc"
