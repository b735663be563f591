// quant_linear() on a chosen instruction set (for quant_linear.cc and the
// tests), checked; the per-instruction-set paths themselves, unchecked, are
// quant_paths.h's.
#pragma once

#include <cstddef>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/quant_linear.h"

namespace nuvec::lm::kernels::detail {

struct QuantCall {
  const float* x;
  std::size_t m, k;
  const void* w;
  QuantType type;
  std::size_t n;
  float* y;
  AffineScales affine{};  // affine4 / affine8 only
};

// quant_linear()'s f32 path on `isa` (avx512bf16 and amx run the avx512
// kernel: the products are f32). InvalidArgument where !isa_allowed(isa).
void quant_linear_with(Isa isa, const QuantCall& call);

}  // namespace nuvec::lm::kernels::detail
