// Choosing the next token from logits: greedy (temperature 0) or sampled
// with a temperature and nucleus (top-p) filtering, from a seeded generator
// so that the same seed gives the same tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "nuvec/device.h"
#include "nuvec/lm/tensor.h"

namespace nuvec::lm {

struct SamplingOptions {
  float temperature = 0;  // 0: greedy (the first of the highest logits)
  float top_p = 1;        // keep the smallest set of likeliest tokens whose probability reaches top_p
  std::uint64_t seed = 0;
};

class Sampler {
 public:
  // Scratch for `vocab_size` candidates comes from `device`, once.
  // InvalidArgument for a negative or non-finite temperature, or top_p
  // outside (0, 1].
  Sampler(Device& device, std::size_t vocab_size, SamplingOptions options = {});

  // The chosen token id. InvalidArgument if logits are not vocab_size long.
  std::int32_t sample(std::span<const float> logits);

 private:
  SamplingOptions options_;
  std::size_t vocab_size_;
  std::uint64_t state_;       // splitmix64
  Tensor probabilities_;      // [vocab] f32
  Tensor order_;              // [vocab] int32 candidate ids (stored in an f32 tensor's bytes)
  double next_uniform();      // in [0, 1)
};

// The index of the first largest value (as torch.argmax).
std::int32_t argmax(std::span<const float> logits);

}  // namespace nuvec::lm
