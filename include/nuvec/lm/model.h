// A Llama-family model loaded from a Hugging Face-style directory: its
// config and its weights, which stay views of the checkpoint's mapping.
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "nuvec/device.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/lm/config.h"
#include "nuvec/lm/tensor.h"

namespace nuvec::lm {

// One decoder layer. Linear weights are [out, in] as nn.Linear stores them;
// a bias that the architecture does not have is an undefined Tensor.
struct LayerWeights {
  Tensor input_norm;  // [hidden]
  Tensor q_proj, k_proj, v_proj, o_proj;
  Tensor q_bias, k_bias, v_bias, o_bias;
  Tensor post_attention_norm;  // [hidden]
  Tensor gate_proj, up_proj, down_proj;
  Tensor gate_bias, up_bias, down_bias;
};

struct ModelWeights {
  Tensor embed_tokens;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  Tensor final_norm;  // [hidden]
  Tensor lm_head;     // [vocab, hidden]; embed_tokens when tied
};

class Model {
 public:
  Model(ModelConfig config, io::SafetensorsFile checkpoint, ModelWeights weights);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const io::SafetensorsFile& checkpoint() const { return checkpoint_; }
  // Bytes of the weights the runtime uses (each tensor once).
  std::size_t weight_bytes() const { return weight_bytes_; }
  // Weight bytes read for each token of a decode step: every layer's, the
  // final norm and the LM head, not the embedding table (one row of it).
  std::size_t weight_bytes_per_token() const;

 private:
  ModelConfig config_;
  io::SafetensorsFile checkpoint_;
  ModelWeights weights_;
  std::size_t weight_bytes_ = 0;
};

// Loads `dir`: config.json, and model.safetensors or
// model.safetensors.index.json with its shards. Aligned files are mapped
// (weights are used in place); others are read once into one buffer, as
// load_safetensors does. InvalidArgument for an unsupported architecture;
// FormatError for a broken config or checkpoint, and for a tensor that is
// missing, of a dtype other than F32/F16/BF16, or mis-shaped, naming the
// tensor and the shape the config implies.
Model load_model(Device& device, const std::filesystem::path& dir);

}  // namespace nuvec::lm
