// The MLP's gating, gate[i] = silu(gate[i]) * up[i] with silu(g) = g / (1 +
// e^-g): a prompt chunk's MLP is millions of exponentials, which the scalar
// libm exp() made a fifth of a 4-thread prefill once the products ran on
// AMX. Vector versions (AVX-512, AVX2) compute e^-g with a degree-6
// polynomial after range reduction (Cephes' expf scheme: within 2 ulp of
// the exact value over the whole f32 range); the portable one calls
// std::exp. Split over the kernel thread pool in blocks of 32768.
#pragma once

#include <cstddef>

namespace nuvec::lm::kernels {

void swiglu(float* gate, const float* up, std::size_t count);

namespace detail {
// One instruction set's loop over [0, count) on the calling thread (tests).
void swiglu_portable(float* gate, const float* up, std::size_t count);
void swiglu_avx2(float* gate, const float* up, std::size_t count);
void swiglu_avx512(float* gate, const float* up, std::size_t count);
}  // namespace detail

}  // namespace nuvec::lm::kernels
