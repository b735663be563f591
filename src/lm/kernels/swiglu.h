// The MLP's gating, gate[i] = silu(gate[i]) * up[i] with silu(g) = g / (1 +
// e^-g): a prompt chunk's MLP is millions of exponentials; with the scalar
// libm exp() they took 6% of a 2-thread prefill of the built-in model on the
// AVX-512 BF16 development VM (perf), a larger share where the products run
// on AMX, five times as fast (not measured separately there). Vector versions (AVX-512, AVX2) compute e^-g with a degree-6
// polynomial after range reduction (Cephes' expf scheme: within 2 ulp of
// the exact value over the whole f32 range); the portable one calls
// std::exp. Split over the kernel thread pool in blocks of 32768.
#pragma once

#include <cstddef>

#include "lm/kernels/cpu_isa.h"

namespace nuvec::lm::kernels {

void swiglu(float* gate, const float* up, std::size_t count);

namespace detail {
// The loop of `isa` (avx512bf16 and amx run the avx512 one) over [0, count)
// on the calling thread (tests). InvalidArgument where !isa_allowed(isa).
void swiglu_with(Isa isa, float* gate, const float* up, std::size_t count);
}  // namespace detail

}  // namespace nuvec::lm::kernels
