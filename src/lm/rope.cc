#include "lm/rope.h"

#include <cmath>
#include <numbers>

namespace nuvec::lm::rope {

void inverse_frequencies(const ModelConfig& c, float* out) {
  const std::size_t half = c.head_dim / 2;
  for (std::size_t i = 0; i < half; ++i) {
    // transformers: 1 / base ** (arange(0, dim, 2).float() / dim), in float32.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(c.head_dim);
    out[i] = 1.0f / std::pow(static_cast<float>(c.rope_theta), exponent);
  }
  if (!c.rope_scaling) return;
  // Llama 3: low frequencies (long wavelengths) slowed by `factor`, high ones
  // kept, those between blended (transformers' _compute_llama3_parameters).
  const Llama3RopeScaling& s = *c.rope_scaling;
  const double old_context = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / s.low_freq_factor;
  const double high_freq_wavelen = old_context / s.high_freq_factor;
  for (std::size_t i = 0; i < half; ++i) {
    const float f = out[i];
    const float wavelen = 2 * std::numbers::pi_v<float> / f;
    if (wavelen < high_freq_wavelen) continue;
    if (wavelen > low_freq_wavelen) {
      out[i] = f / static_cast<float>(s.factor);
      continue;
    }
    const float smooth = static_cast<float>((old_context / wavelen - s.low_freq_factor) /
                                            (s.high_freq_factor - s.low_freq_factor));
    out[i] = (1 - smooth) * f / static_cast<float>(s.factor) + smooth * f;
  }
}

void angles(const float* inv_freq, std::size_t half, std::size_t first, std::size_t rows, float* cos, float* sin) {
  for (std::size_t r = 0; r < rows; ++r) {
    // transformers multiplies in float32, then takes cos and sin of that.
    const float position = static_cast<float>(first + r);
    for (std::size_t i = 0; i < half; ++i) {
      const float angle = position * inv_freq[i];
      cos[r * half + i] = static_cast<float>(std::cos(double{angle}));
      sin[r * half + i] = static_cast<float>(std::sin(double{angle}));
    }
  }
}

void apply(float* x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
           const float* cos, const float* sin) {
  const std::size_t half = head_dim / 2;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* c = cos + r * half;
    const float* s = sin + r * half;
    for (std::size_t h = 0; h < heads; ++h) {
      float* v = x + r * row_stride + h * head_dim;
      for (std::size_t i = 0; i < half; ++i) {
        // x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1].
        const float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c[i] - x2 * s[i];
        v[i + half] = x2 * c[i] + x1 * s[i];
      }
    }
  }
}

void apply_interleaved(float* x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
                       const float* cos, const float* sin) {
  const std::size_t half = head_dim / 2;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* c = cos + r * half;
    const float* s = sin + r * half;
    for (std::size_t h = 0; h < heads; ++h) {
      float* v = x + r * row_stride + h * head_dim;
      for (std::size_t i = 0; i < half; ++i) {
        const float x1 = v[2 * i], x2 = v[2 * i + 1];
        v[2 * i] = x1 * c[i] - x2 * s[i];
        v[2 * i + 1] = x2 * c[i] + x1 * s[i];
      }
    }
  }
}

}  // namespace nuvec::lm::rope
