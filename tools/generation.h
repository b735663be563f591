// What `nuvec run` and `nuvec profile-phase` drive once a model is loaded:
// one sequence's session on the CPU (lm::Session) or on a GPU
// (lm::gpu::Session), behind the calls they share.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "nuvec/lm/model.h"
#include "nuvec/lm/sampler.h"
#include "nuvec/lm/session.h"

namespace nuvec::tool {

class Generation {
 public:
  virtual ~Generation() = default;
  // The last token's logits, in host memory, valid until the next call.
  virtual std::span<const float> prefill(std::span<const std::int32_t> tokens, const lm::LogitsSink& each) = 0;
  virtual std::span<const float> decode(std::int32_t token) = 0;
  // Greedy: the first largest logit's id (on a GPU chosen there, so that
  // only the id comes back).
  virtual std::int32_t prefill_greedy(std::span<const std::int32_t> tokens) { return lm::argmax(prefill(tokens, {})); }
  virtual std::int32_t decode_greedy(std::int32_t token) { return lm::argmax(decode(token)); }
  virtual void release_activations() = 0;
  // The next token goes at `position` (at most the tokens held so far).
  virtual void rewind(std::size_t position) = 0;
  // How the decode steps were queued, in words, where it is worth saying (a
  // GPU's CUDA graphs); empty otherwise.
  virtual std::string decode_launch_note() const { return {}; }
  virtual std::size_t kv_cache_bytes() const = 0;
  virtual lm::ActivationPlan activation_plan(std::size_t rows) const = 0;
};

// The CPU Session over `model` on `device`, as the commands have always run it.
class CpuGeneration final : public Generation {
 public:
  CpuGeneration(Device& device, const lm::Model& model, lm::SessionOptions options)
      : session_(device, model, std::move(options)) {}
  std::span<const float> prefill(std::span<const std::int32_t> tokens, const lm::LogitsSink& each) override {
    return session_.prefill(tokens, each);
  }
  std::span<const float> decode(std::int32_t token) override { return session_.decode(token); }
  void release_activations() override { session_.release_activations(); }
  void rewind(std::size_t position) override { session_.rewind(position); }
  std::size_t kv_cache_bytes() const override { return session_.kv_cache_bytes(); }
  lm::ActivationPlan activation_plan(std::size_t rows) const override { return session_.activation_plan(rows); }

 private:
  lm::Session session_;
};

}  // namespace nuvec::tool
