// Attention tiles for AVX-512: 16 lanes (attention_tile.inc).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "lm/attention_kernels.h"

#define NUVEC_ISA_TARGET "avx2,fma,avx512f,avx512bw,avx512vl,avx512dq"
#include "lm/kernels/isa_target_begin.inc"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns about the deliberately undefined vectors inside its own
// intrinsics (_mm512_cvtph_ps); nothing of ours is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define NUVEC_LANES 16
#define NUVEC_LOAD_HALVES(p) \
  (F) _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))
namespace nuvec::lm::attention::detail {
#include "lm/attention_tile.inc"

void attend_tile_avx512(const TileTask& task) { attend_tile_either(task); }

}  // namespace nuvec::lm::attention::detail

#include "lm/kernels/isa_target_end.inc"
