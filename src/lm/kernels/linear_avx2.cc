// linear() on AVX2 + FMA + F16C (x86-64 since Haswell and Zen 1): streaming
// and f32 GEMM for every weight type, 8 lanes wide, weights widened to f32
// on the fly (bf16 by a 16-bit shift, f16 by vcvtph2ps).
#define NUVEC_ISA_TARGET "avx2,fma,f16c"
#include "lm/kernels/linear_isa_begin.inc"

namespace nuvec::lm::kernels::detail {
namespace {

struct Avx2 {
  using V = __m256;
  static constexpr std::size_t W = 8;

  static __m256i first(std::size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load_n(const float* p, std::size_t n) { return _mm256_maskload_ps(p, first(n)); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static float reduce(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  static V widen(__m128i bits, WeightType type) {
    if (type == WeightType::f16) return _mm256_cvtph_ps(bits);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  static void split_bf16(const std::uint16_t* p, V& even, V& odd) {
    const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    even = _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16));
    odd = _mm256_castsi256_ps(_mm256_and_si256(pairs, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  template <WeightType T>
  static V load_w(const typename std::conditional_t<T == WeightType::f32, float, std::uint16_t>* p) {
    if constexpr (T == WeightType::f32) {
      return _mm256_loadu_ps(p);
    } else {
      return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), T);
    }
  }
  template <WeightType T>
  static V load_w_n(const typename std::conditional_t<T == WeightType::f32, float, std::uint16_t>* p, std::size_t n) {
    if constexpr (T == WeightType::f32) {
      return load_n(p, n);
    } else {
      std::uint16_t bits[8] = {};  // AVX2 has no 16-bit masked load
      std::memcpy(bits, p, n * sizeof(std::uint16_t));
      return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bits)), T);
    }
  }

  // One row at a time: widen 8 weights, then place them 8 floats apart.
  template <WeightType T>
  static void pack_columns(const typename std::conditional_t<T == WeightType::f32, float, std::uint16_t>* w,
                           std::size_t ldw, std::size_t cols, std::size_t kl, float* dst, std::size_t stride) {
    alignas(32) float lanes[W];
    for (std::size_t c = 0; c < W; ++c) {
      for (std::size_t p = 0; p < kl; p += W) {
        const std::size_t count = std::min(W, kl - p);
        if (c >= cols) {
          for (std::size_t l = 0; l < count; ++l) dst[(p + l) * stride + c] = 0.0f;
          continue;
        }
        store(lanes, count == W ? load_w<T>(w + c * ldw + p) : load_w_n<T>(w + c * ldw + p, count));
        for (std::size_t l = 0; l < count; ++l) dst[(p + l) * stride + c] = lanes[l];
      }
    }
  }
};

}  // namespace
}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/linear_simd.inc"

namespace nuvec::lm::kernels::detail {
namespace {
using Avx2F32 = F32Kernel<Avx2, kAvx2F32Gemm>;  // linear_blocking.h says why this blocking
}  // namespace

void linear_avx2(const LinearCall& call) { linear_f32_paths<Avx2, Avx2F32>(call); }

}  // namespace nuvec::lm::kernels::detail

#include "lm/kernels/isa_target_end.inc"
