// The element-wise and row-wise operations of a Llama-family decoder, on f32
// activations laid out as [rows][dim], row-major. Weights (norms, biases,
// embedding tables) may be f32, f16 or bf16 and are read in place. Each op
// matches Hugging Face transformers' computation in float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "nuvec/lm/tensor.h"

namespace nuvec::lm::ops {

// Element i of a weight tensor (any runtime dtype) as f32.
float weight_at(const Tensor& w, std::size_t i);

// out[r] = table[tokens[r]] as f32, for every r; out is [tokens.size()][hidden].
// InvalidArgument for a token outside [0, vocab).
void embedding(const Tensor& table, std::span<const std::int32_t> tokens, float* out);

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, for `rows` rows of `dim`.
// x and out may be the same.
void rms_norm(const float* x, std::size_t rows, std::size_t dim, const Tensor& weight, double eps, float* out);

// y[r] += bias for every row; bias is [n].
void add_bias(float* y, std::size_t rows, std::size_t n, const Tensor& bias);

// x[i] += y[i].
void add(float* x, const float* y, std::size_t count);

// gate[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
void swiglu(float* gate, const float* up, std::size_t count);

// y = x · wᵀ (+ bias): x [m][k] f32, w [n][k] of its dtype, y [m][n]. The
// workspace holds linear_workspace_bytes(m, w) bytes (may be null when 0).
// `exact` asks for f32 products with bf16 weights too (kernels::Precision).
void linear(const float* x, std::size_t m, const Tensor& w, const Tensor& bias, float* y, void* workspace,
            bool exact = false);
std::size_t linear_workspace_bytes(std::size_t m, const Tensor& w);

}  // namespace nuvec::lm::ops
