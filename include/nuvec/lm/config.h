// A model's config.json, as Hugging Face transformers writes it for the
// Llama family: the figures the runtime needs, checked as hostile input.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec::lm {

enum class Architecture { llama, mistral, qwen2 };

// "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM".
std::string_view architecture_name(Architecture arch);

// Llama 3's frequency-dependent RoPE scaling (rope_type "llama3").
struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::size_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  Architecture architecture = Architecture::llama;
  std::size_t vocab_size = 0;
  std::size_t hidden_size = 0;
  std::size_t intermediate_size = 0;
  std::size_t num_hidden_layers = 0;
  std::size_t num_attention_heads = 0;
  std::size_t num_key_value_heads = 0;  // default: num_attention_heads
  std::size_t head_dim = 0;             // default: hidden_size / num_attention_heads
  std::size_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::optional<Llama3RopeScaling> rope_scaling;  // none: plain RoPE
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q, k, v and o biases (Llama's attention_bias)
  bool qkv_bias = false;        // q, k and v biases only (Qwen2)
  bool mlp_bias = false;        // gate, up and down biases (Llama's mlp_bias)
  // Per layer: how many positions back a query may look (0: all of them).
  // Mistral's sliding_window, Qwen2's use_sliding_window/max_window_layers
  // or layer_types.
  std::vector<std::size_t> sliding_window;
  // Whether each head's q and k rows come interleaved (row 2i is Hugging
  // Face's row i, row 2i+1 its row i + head_dim/2), as llama.cpp's converter
  // writes Llama-architecture GGUF files: RoPE then rotates adjacent pairs.
  bool rope_interleaved = false;

  std::size_t q_dim() const { return num_attention_heads * head_dim; }
  std::size_t kv_dim() const { return num_key_value_heads * head_dim; }
  // Query heads that share one key/value head.
  std::size_t group_size() const { return num_attention_heads / num_key_value_heads; }
};

// Parses config.json text; `file` names it in errors. FormatError (with the
// byte offset) for text that is not JSON, and for a missing, mistyped or
// out-of-range field, naming the field and saying what was expected;
// InvalidArgument for an architecture, activation or rope_scaling type that
// the runtime does not implement, naming what it does.
ModelConfig parse_model_config(std::string_view json, const std::filesystem::path& file);

// Reads and parses `path` (a config.json). IoError if it cannot be read.
ModelConfig read_model_config(const std::filesystem::path& path);

}  // namespace nuvec::lm

namespace nuvec::io {
struct GgufFile;
}

namespace nuvec::lm {

// The config of a GGUF file, from its metadata as llama.cpp writes it
// (general.architecture "llama" or "qwen2", <arch>.embedding_length, ...;
// Mistral files are "llama" there). Tied embeddings and Qwen2's q/k/v
// biases are read from which tensors the file has. FormatError naming the
// key for a missing, mistyped or out-of-range value; InvalidArgument for an
// architecture or feature the runtime does not implement, naming it.
ModelConfig gguf_model_config(const io::GgufFile& file, const std::filesystem::path& path);

// The config of what load_model takes: a .gguf file's metadata, or a
// model directory's config.json.
ModelConfig read_config_of(const std::filesystem::path& model);

}  // namespace nuvec::lm
