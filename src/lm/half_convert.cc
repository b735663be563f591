#include "lm/half_convert.h"

#include <immintrin.h>

#include <cstring>

#include "lm/kernels/cpu_isa.h"

namespace nuvec::lm::half {

std::uint16_t from_f32(float x) {
  const auto h = static_cast<_Float16>(x);
  std::uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

float to_f32(std::uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}

namespace {

void from_f32_portable(const float* src, std::uint16_t* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = from_f32(src[i]);
}

#define NUVEC_ISA_TARGET "avx,f16c"
#include "lm/kernels/isa_target_begin.inc"

void from_f32_f16c(const float* src, std::uint16_t* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) {
    dst[i] = static_cast<std::uint16_t>(
        _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(src[i]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 0));
  }
}

#include "lm/kernels/isa_target_end.inc"

}  // namespace

void from_f32(const float* src, std::uint16_t* dst, std::size_t n) {
  // cpu_isa.h's AVX2 level includes F16C.
  static const bool f16c = kernels::isa_allowed(kernels::Isa::avx2);
  if (f16c) {
    from_f32_f16c(src, dst, n);
  } else {
    from_f32_portable(src, dst, n);
  }
}

}  // namespace nuvec::lm::half
