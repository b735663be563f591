// Each instruction set's linear(), unchecked: every one but the portable
// loops is compiled for its set (#pragma GCC target) and may only run where
// isa_allowed() says so. Called by linear.cc's checked entry points
// (linear_kernels.h) and by the instruction-set files themselves, which hand
// the calls they do not take to the narrower path; nothing else includes
// this header.
#pragma once

#include "lm/kernels/linear_kernels.h"

namespace nuvec::lm::kernels::detail {

void linear_portable(const LinearCall& call);
void linear_avx2(const LinearCall& call);
void linear_avx512(const LinearCall& call);
void linear_avx512bf16(const LinearCall& call);
void linear_amx(const LinearCall& call);
// linear_amx() with the tile instructions done in software (linear_amx.cc).
void linear_amx_software(const LinearCall& call);

}  // namespace nuvec::lm::kernels::detail
