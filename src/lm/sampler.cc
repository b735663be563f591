#include "nuvec/lm/sampler.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "nuvec/lm/splitmix64.h"
#include "nuvec/error.h"
#include "nuvec/trace_tag.h"

namespace nuvec::lm {

std::int32_t argmax(std::span<const float> logits) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<std::int32_t>(best);
}

Sampler::Sampler(Device& device, std::size_t vocab_size, SamplingOptions options)
    : options_(options), vocab_size_(vocab_size), state_(options.seed) {
  if (!(options.temperature >= 0) || !std::isfinite(options.temperature)) {
    throw InvalidArgument(fmt::format("temperature {} must be a finite number >= 0", options.temperature));
  }
  if (!(options.top_p > 0 && options.top_p <= 1)) {
    throw InvalidArgument(fmt::format("top_p {} must be in (0, 1]", options.top_p));
  }
  if (vocab_size == 0) throw InvalidArgument("a sampler needs a vocabulary of at least one token");
  if (options.temperature > 0) {
    const Tag tag(device, "logits");  // softmax probabilities and their order: what sampling reads the logits into
    probabilities_ = Tensor::empty(device, DType::f32, Shape{vocab_size});
    order_ = Tensor::empty(device, DType::f32, Shape{vocab_size});  // int32 ids, same size as f32
  }
}

double Sampler::next_uniform() {
  return static_cast<double>(splitmix64_next(state_) >> 11) * 0x1.0p-53;
}

std::int32_t Sampler::sample(std::span<const float> logits) {
  if (logits.size() != vocab_size_) {
    throw InvalidArgument(fmt::format("{} logits for a vocabulary of {}", logits.size(), vocab_size_));
  }
  if (options_.temperature == 0) return argmax(logits);

  // Softmax of logits / temperature.
  float* p = probabilities_.mutable_f32();
  const float top = logits[static_cast<std::size_t>(argmax(logits))];
  double total = 0;
  for (std::size_t i = 0; i < vocab_size_; ++i) {
    p[i] = std::exp((logits[i] - top) / options_.temperature);
    total += p[i];
  }
  const auto inv_total = static_cast<float>(1.0 / total);
  for (std::size_t i = 0; i < vocab_size_; ++i) p[i] *= inv_total;

  auto* ids = reinterpret_cast<std::int32_t*>(order_.mutable_data());
  for (std::size_t i = 0; i < vocab_size_; ++i) ids[i] = static_cast<std::int32_t>(i);
  const auto likelier = [p](std::int32_t a, std::int32_t b) {
    return p[a] != p[b] ? p[a] > p[b] : a < b;  // ties by id, so the order is total
  };
  // The nucleus: the fewest likeliest tokens whose mass reaches top_p. Sort
  // only as many as it might need, growing the guess: usually a few dozen.
  std::size_t kept = vocab_size_;
  if (options_.top_p < 1) {
    for (std::size_t guess = std::min<std::size_t>(64, vocab_size_);; guess = std::min(vocab_size_, guess * 4)) {
      std::partial_sort(ids, ids + guess, ids + vocab_size_, likelier);
      double mass = 0;
      std::size_t n = 0;
      while (n < guess && mass < options_.top_p) mass += p[ids[n++]];
      if (mass >= options_.top_p || guess == vocab_size_) {
        kept = n;
        break;
      }
    }
  }
  double mass = 0;
  for (std::size_t i = 0; i < kept; ++i) mass += p[ids[i]];
  double target = next_uniform() * mass;
  for (std::size_t i = 0; i < kept; ++i) {
    target -= p[ids[i]];
    if (target < 0) return ids[i];
  }
  return ids[kept - 1];  // rounding left a sliver of mass: the last kept token
}

}  // namespace nuvec::lm
