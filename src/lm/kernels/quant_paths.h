// Each instruction set's quant_linear(), unchecked: all but the portable one
// are compiled for their set (#pragma GCC target) and may only run where
// isa_allowed() says so. Called by quant_linear.cc (quant_linear_with, and
// the integer path once quant_dot_supported() says yes); nothing else
// includes this header.
#pragma once

#include "lm/kernels/quant_kernels.h"

namespace nuvec::lm::kernels::detail {

void quant_linear_portable(const QuantCall& call);
void quant_linear_avx2(const QuantCall& call);
void quant_linear_avx512(const QuantCall& call);

// The integer path (AVX-512 VNNI); workspace holds quant_dot_layout(k, m).bytes.
void quant_dot_avx512vnni(const QuantCall& call, void* workspace);

}  // namespace nuvec::lm::kernels::detail
