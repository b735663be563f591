// quant_linear() on AVX2 + FMA: 8 lanes, tiles of 4 rows of x.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "lm/kernels/quant_paths.h"
#include "lm/kernels/thread_pool.h"

#define NUVEC_ISA_TARGET "avx2,fma,f16c"
#include "lm/kernels/isa_target_begin.inc"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns about the deliberately undefined vectors inside its own
// intrinsics (_mm512_undefined_*); nothing of ours is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace nuvec::lm::kernels::detail {
namespace {

#include "lm/kernels/quant_unpack.inc"

struct Avx2 {
  using V = __m256;
  static constexpr std::size_t W = 8;
  static constexpr int kMaxRows = 4;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static float reduce(V v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
  }
  static V widen_i8(const std::int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
};

#include "lm/kernels/quant_simd.inc"

}  // namespace

void quant_linear_avx2(const QuantCall& call) { quant_linear_simd<Avx2>(call); }

}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/isa_target_end.inc"
