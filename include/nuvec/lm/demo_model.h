// The built-in model: a deterministic random-weight Llama-family checkpoint
// (config.json + safetensors, tensors 256-byte aligned so they are mapped),
// so that the runtime can be run and measured offline. Same options, same
// bytes, on every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "nuvec/lm/config.h"
#include "nuvec/lm/tensor.h"

namespace nuvec::lm {

struct DemoModelOptions {
  Architecture architecture = Architecture::llama;
  std::size_t vocab_size = 32000;
  std::size_t hidden_size = 1024;
  std::size_t intermediate_size = 2816;
  std::size_t num_hidden_layers = 12;
  std::size_t num_attention_heads = 16;
  std::size_t num_key_value_heads = 4;
  std::size_t head_dim = 0;  // 0: hidden_size / num_attention_heads
  std::size_t max_position_embeddings = 16384;  // room for an 8192-token prompt and what follows
  double rope_theta = 500000.0;
  std::optional<Llama3RopeScaling> rope_scaling;
  std::size_t sliding_window = 0;  // Mistral and Qwen2 only; 0: none
  bool tie_word_embeddings = false;
  DType dtype = DType::bf16;
  // Weights are uniform with this standard deviation (transformers'
  // initializer_range is 0.02); norm weights are 1 ± 0.1; biases as weights.
  double init_std = 0.02;
  std::uint64_t seed = 0;
  // Largest shard in bytes (model-0000i-of-0000n.safetensors plus
  // model.safetensors.index.json); 0: one model.safetensors.
  std::size_t max_shard_bytes = 0;
  // Called after each tensor is made with (weight bytes so far, all weight
  // bytes): writing the 383 MiB default takes seconds, a progress line shows it.
  std::function<void(std::size_t, std::size_t)> progress;
};

// The config the options describe (what config.json will say).
ModelConfig demo_model_config(const DemoModelOptions& options);

// Bytes of the weights it writes.
std::size_t demo_model_weight_bytes(const DemoModelOptions& options);

// Writes config.json and the safetensors file(s) into `dir` (created if
// absent), each atomically. InvalidArgument for inconsistent options (as a
// config.json with them would be refused); IoError if it cannot write.
void write_demo_model(const std::filesystem::path& dir, const DemoModelOptions& options);

}  // namespace nuvec::lm
