// A generation session: one sequence's KV cache and the activations of the
// forward pass, all from the model's device. Prompts are processed in
// chunks of rows (each a batch of matrix products), decoding one token at a
// time; after the first decode step no further memory is taken from the
// system (the buffers are reused).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "nuvec/device.h"
#include "nuvec/lm/model.h"

namespace nuvec::lm {

// How prompt-sized matrix products meet bf16 weights (kernels/linear.h):
// `fast` rounds the activations to bf16 where the CPU multiplies bf16 pairs
// natively (twice the speed, logits off by about 1e-3 of their size);
// `exact` computes in f32. Decode steps and f32/f16 weights are always f32.
enum class Precision { fast, exact };

// What the KV cache stores keys and values as. f16 halves its bytes (and the
// memory attention streams at long contexts); attention converts to f32 as
// it reads, so sums stay f32 and only the stored keys and values are rounded
// (relative error 2^-11). The default was chosen by measurement (docs/lm.md).
enum class KVCachePrecision { f32, f16 };
// "f32" or "f16".
std::string_view kv_cache_precision_name(KVCachePrecision precision);
// Bytes one key or value element takes: 4 or 2.
std::size_t kv_cache_element_bytes(KVCachePrecision precision);

struct SessionOptions {
  // Positions the KV cache holds (prompt + generated tokens); 0 means the
  // model's max_position_embeddings. The cache is allocated for all of them
  // when the session is made.
  std::size_t context = 0;
  // Prompt rows per forward pass: bounds the activations (and so the peak)
  // independently of the prompt's length.
  std::size_t prefill_chunk = 512;
  Precision precision = Precision::fast;
  KVCachePrecision kv_cache = KVCachePrecision::f32;
  // Called after each prefill chunk with (tokens done, tokens in the call).
  std::function<void(std::size_t, std::size_t)> progress;
};

// Receives the logits of every position a prefill processes: (position, vocab floats).
using LogitsSink = std::function<void(std::size_t, std::span<const float>)>;

// What one forward pass over `rows` tokens holds, by buffer.
struct ActivationPlan {
  std::size_t total_bytes = 0;    // every activation and scratch buffer together
  std::size_t largest_bytes = 0;  // the largest single one of them
  std::string largest_name;       // what it is, e.g. "mlp gate [512 x 2816]"
};

class Session {
 public:
  // OutOfMemory if the KV cache does not fit under the memory limit;
  // InvalidArgument for a context past max_position_embeddings.
  Session(Device& device, const Model& model, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Runs `tokens` at the next positions and returns the logits of the last
  // (vocab_size floats, valid until the next call). With `each`, logits are
  // computed for every token and handed to it as they are made.
  // InvalidArgument for an empty list, a token outside the vocabulary, or
  // more tokens than the context has room for.
  std::span<const float> prefill(std::span<const std::int32_t> tokens, const LogitsSink& each = {});
  // prefill of one token.
  std::span<const float> decode(std::int32_t token);

  // Tokens in the cache so far.
  std::size_t position() const;
  std::size_t context() const;
  // Forgets every token (the cache is kept, to be overwritten).
  void clear();
  // Forgets the tokens at `position` and after, as a KV cache's crop does:
  // the next token goes at `position`. InvalidArgument past position().
  void rewind(std::size_t position);
  // Returns the activation buffers to the device; the next call takes what
  // it needs again. Between a long prompt and decoding, this drops the
  // prompt-sized buffers so that decode holds only one-row ones.
  void release_activations();

  std::size_t kv_cache_bytes() const;
  // The activations a forward pass over `rows` tokens allocates.
  ActivationPlan activation_plan(std::size_t rows, bool all_logits = false) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nuvec::lm
