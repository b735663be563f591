// Rotary position embeddings as Hugging Face's Llama applies them: the
// rotate_half convention (dimension i pairs with i + head_dim/2), inverse
// frequencies theta^(-2i/head_dim), optionally rescaled as Llama 3 does.
#pragma once

#include <cstddef>

#include "nuvec/lm/config.h"

namespace nuvec::lm::rope {

// The head_dim/2 inverse frequencies, in f32 as transformers computes them,
// with Llama 3's rope_scaling applied where the config has one.
void inverse_frequencies(const ModelConfig& config, float* out);

// cos and sin of position × frequency for `rows` positions from `first`:
// each [rows][half], half = head_dim / 2.
void angles(const float* inv_freq, std::size_t half, std::size_t first, std::size_t rows, float* cos, float* sin);

// Rotates `heads` heads of head_dim in each of `rows` rows of x (row stride
// `row_stride` floats) in place, row r by angles row r.
void apply(float* x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
           const float* cos, const float* sin);

}  // namespace nuvec::lm::rope
