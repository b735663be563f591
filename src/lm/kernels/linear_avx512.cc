// linear() on AVX-512 (F/BW/VL/DQ + FMA + F16C): streaming and f32 GEMM for
// every weight type, 16 lanes wide. The bf16 fast path is linear_avx512bf16.cc.
#define NUVEC_ISA_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"
#include "lm/kernels/linear_isa_begin.inc"

#include "lm/kernels/avx512_transpose.inc"

namespace nuvec::lm::kernels::detail {
namespace {

struct Avx512 {
  using V = __m512;
  static constexpr std::size_t W = 16;

  static __mmask16 first(std::size_t n) { return static_cast<__mmask16>((1u << n) - 1); }
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load_n(const float* p, std::size_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static float reduce(V v) { return _mm512_reduce_add_ps(v); }

  static V widen_bf16(__m256i bits) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16)); }
  static void split_bf16(const std::uint16_t* p, V& even, V& odd) {
    const __m512i pairs = _mm512_loadu_si512(p);
    even = _mm512_castsi512_ps(_mm512_slli_epi32(pairs, 16));
    odd = _mm512_castsi512_ps(_mm512_and_si512(pairs, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  template <WeightType T>
  static V load_w(const typename std::conditional_t<T == WeightType::f32, float, std::uint16_t>* p) {
    if constexpr (T == WeightType::f32) {
      return _mm512_loadu_ps(p);
    } else if constexpr (T == WeightType::f16) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
      return widen_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
  }
  template <WeightType T>
  static V load_w_n(const typename std::conditional_t<T == WeightType::f32, float, std::uint16_t>* p, std::size_t n) {
    if constexpr (T == WeightType::f32) {
      return _mm512_maskz_loadu_ps(first(n), p);
    } else if constexpr (T == WeightType::f16) {
      return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first(n), p));
    } else {
      return widen_bf16(_mm256_maskz_loadu_epi16(first(n), p));
    }
  }

  // 16 rows x 16 k per round: widen, transpose in registers, store.
  template <WeightType T>
  static void pack_columns(const typename std::conditional_t<T == WeightType::f32, float, std::uint16_t>* w,
                           std::size_t ldw, std::size_t cols, std::size_t kl, float* dst, std::size_t stride) {
    for (std::size_t p0 = 0; p0 < kl; p0 += W) {
      const std::size_t count = std::min(W, kl - p0);
      __m512i r[16];
#pragma GCC unroll 16
      for (std::size_t c = 0; c < W; ++c)
        r[c] = c >= cols        ? _mm512_setzero_si512()
               : count == W     ? _mm512_castps_si512(load_w<T>(w + c * ldw + p0))
                                : _mm512_castps_si512(load_w_n<T>(w + c * ldw + p0, count));
      transpose16x16(r);
      for (std::size_t p = 0; p < count; ++p) _mm512_storeu_si512(dst + (p0 + p) * stride, r[p]);
    }
  }
};

}  // namespace
}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/linear_simd.inc"

namespace nuvec::lm::kernels::detail {
namespace {
using Avx512F32 = F32Kernel<Avx512, kAvx512F32Gemm>;  // linear_blocking.h says why this blocking
}  // namespace

void linear_avx512(const LinearCall& call) { linear_f32_paths<Avx512, Avx512F32>(call); }

}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/isa_target_end.inc"
