// The LM runtime on an NVIDIA GPU: a loaded model's weights uploaded to a
// CUDA device (gpu::Weights) and a generation session over them
// (gpu::Session) that runs the CPU Session's forward pass there, one CUDA
// stream per session. docs/lm.md, "On a GPU", says what differs from the
// CPU (activations and the KV cache in the checkpoint's bf16/f16, the
// residual stream f32, products through cuBLASLt).
//
// Built where nuvec has both its CUDA backend and the LM runtime (the
// library nuvec_lm_cuda); gpu_available() says whether this process can use
// it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nuvec/device.h"
#include "nuvec/lm/config.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/session.h"

namespace nuvec::lm::gpu {

// A model's tensors in device memory of one CUDA device, each uploaded once
// as the checkpoint stores it (a tied LM head is the embedding table's
// buffer), tagged "weights": they count in that device's `active`. The CPU
// model may go once this exists; the weights keep its config.
class Weights {
 public:
  // Uploads `model`'s tensors through nuvec's upload engine (cuda::upload:
  // page-locked staging in the device's `wired` while it runs) and waits for
  // the copies. InvalidArgument, before anything is uploaded, when `gpu` is
  // not a CUDA device or a tensor is of a type the GPU path does not compute
  // with (quantized GGUF/MLX weights; f32 linear weights), naming the tensor
  // and its type; OutOfMemory past the device's memory limit, statistics as
  // they were.
  Weights(Device& gpu, const Model& model);
  ~Weights();
  Weights(Weights&&) noexcept;
  Weights& operator=(Weights&&) noexcept;

  const ModelConfig& config() const;
  Device& device() const;
  // "bf16" or "f16": the activations' and the KV cache's type.
  std::string_view dtype_name() const;
  // Bytes of device memory the weights take (their buffers' rounded sizes).
  std::size_t bytes() const;
  // How long the upload took, in seconds.
  double upload_seconds() const;

  struct State;
  const State& state() const { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

struct SessionOptions {
  // Positions the KV cache holds; 0: the model's max_position_embeddings.
  std::size_t context = 0;
  // Prompt rows per forward pass.
  std::size_t prefill_chunk = 512;
  // Decode steps after the first replayed as one CUDA graph each (captured
  // from the first steps, again when a step's launches change) rather than
  // launched kernel by kernel. The same kernels with the same arguments:
  // the logits are the same bits either way.
  bool decode_graphs = true;
};

// How a session's decode steps were queued so far.
struct DecodeLaunches {
  bool graphs = false;        // SessionOptions::decode_graphs, and no capture has failed
  std::size_t steps = 0;      // decode steps
  std::size_t replays = 0;    // of them, replayed as a graph
  std::size_t captures = 0;   // graphs captured (a new one when a step's launches change)
  std::string why_not;        // a capture's failure, when it turned graphs off
};

// One sequence on the GPU: its KV cache and activations, nuvec buffers of
// the weights' device tagged "kv_cache", "activations", "scratch" and
// "logits" (as the CPU Session's), made when first needed and reused. A
// decode step queues its kernels on the session's stream and waits only to
// read back its result: the logits, or with the *_greedy calls the one
// token id the device picked.
class Session {
 public:
  // `weights` must outlive the session. OutOfMemory (before anything is
  // allocated, statistics as they were) when the KV cache, the decode
  // scratch and the products' workspace do not fit under the device's
  // memory limit; InvalidArgument for a context past
  // max_position_embeddings or a shape the kernels are not built for.
  Session(const Weights& weights, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // As lm::Session's: the last token's logits (vocab_size floats, in host
  // memory, valid until the next call); with `each`, every token's.
  // InvalidArgument for an empty list, a token outside the vocabulary or
  // more tokens than the context holds.
  std::span<const float> prefill(std::span<const std::int32_t> tokens, const LogitsSink& each = {});
  std::span<const float> decode(std::int32_t token);
  // The same, returning the id of the first largest logit (lm::argmax),
  // chosen on the device: only that id comes back to the host.
  std::int32_t prefill_greedy(std::span<const std::int32_t> tokens);
  std::int32_t decode_greedy(std::int32_t token);

  std::size_t position() const;
  std::size_t context() const;
  void clear();
  // As lm::Session's: the next token goes at `position`; InvalidArgument
  // past position().
  void rewind(std::size_t position);
  // Gives the activation buffers back (prompt-sized ones, before decoding).
  void release_activations();
  std::size_t kv_cache_bytes() const;
  DecodeLaunches decode_launches() const;
  // The activations a forward pass over `rows` tokens allocates.
  ActivationPlan activation_plan(std::size_t rows, bool all_logits = false) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Whether this process can run the GPU path on CUDA device `ordinal`; when
// not, `why` (if given) says why in one sentence (no GPU, no driver, no
// such ordinal).
bool gpu_available(int ordinal, std::string* why = nullptr);

}  // namespace nuvec::lm::gpu
