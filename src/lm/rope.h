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

// The same rotation for heads whose dimensions come interleaved (element 2i
// of a head is rotate_half's element i, 2i+1 its i + half): llama.cpp's
// converter permutes the q and k rows of Llama files so, and rotating
// adjacent pairs with frequency i undoes it exactly. Attention scores do not
// depend on the order of a head's dimensions, as q and k share it.
void apply_interleaved(float* x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
                       const float* cos, const float* sin);

}  // namespace nuvec::lm::rope
