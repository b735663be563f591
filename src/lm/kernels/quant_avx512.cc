// quant_linear() on AVX-512: 16 lanes, tiles of 8 rows of x.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "lm/kernels/quant_paths.h"
#include "lm/kernels/thread_pool.h"

#define NUVEC_ISA_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"
#include "lm/kernels/isa_target_begin.inc"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns about the deliberately undefined vectors inside its own
// intrinsics (_mm512_undefined_*); nothing of ours is uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace nuvec::lm::kernels::detail {
namespace {

#include "lm/kernels/quant_unpack.inc"

struct Avx512 {
  using V = __m512;
  static constexpr std::size_t W = 16;
  static constexpr int kMaxRows = 8;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static float reduce(V v) { return _mm512_reduce_add_ps(v); }
  static V widen_i8(const std::int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
};

#include "lm/kernels/quant_simd.inc"

}  // namespace

void quant_linear_avx512(const QuantCall& call) { quant_linear_simd<Avx512>(call); }

}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/isa_target_end.inc"
