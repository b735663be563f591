// swiglu's per-instruction-set loops, unchecked: the AVX2 and AVX-512 ones
// are compiled for their sets (swiglu_avx2.cc, swiglu_avx512.cc) and may only
// run where isa_allowed() says so. For swiglu.cc, which picks one after that
// check, and the files that define them; nothing else includes this header.
#pragma once

#include <cstddef>

namespace nuvec::lm::kernels::detail {

// gate[i] = silu(gate[i]) * up[i] for i < count, on the calling thread.
void swiglu_portable(float* gate, const float* up, std::size_t count);
void swiglu_avx2(float* gate, const float* up, std::size_t count);
void swiglu_avx512(float* gate, const float* up, std::size_t count);

}  // namespace nuvec::lm::kernels::detail
