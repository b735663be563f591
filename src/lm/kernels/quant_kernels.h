// quant_linear()'s per-instruction-set entry points (for quant_linear.cc and
// the tests): each compiled in its own file for its instruction set.
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

void quant_linear_portable(const QuantCall& call);
void quant_linear_avx2(const QuantCall& call);
void quant_linear_avx512(const QuantCall& call);

// quant_linear() on a chosen instruction set, which the CPU must support
// (avx512bf16 and amx run the avx512 kernel: the products are f32).
void quant_linear_with(Isa isa, const QuantCall& call);

}  // namespace nuvec::lm::kernels::detail
