// A Llama-family model: its config and its weights, which stay views of the
// file they were loaded from (a Hugging Face-style directory's safetensors,
// a GGUF file), held by the model.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <vector>

#include "nuvec/device.h"
#include "nuvec/io/gguf.h"
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

// What a model's weights are views of, held as long as the model is (a
// mapped safetensors checkpoint, a GGUF file: nuvec/lm/model_files.h). The
// model knows no format: each loader brings its own.
class ModelFile {
 public:
  virtual ~ModelFile() = default;
  // Bytes it holds: its mappings (`mapped`) and the buffers a file that could
  // not be mapped was read into (`active`).
  virtual std::size_t held_bytes() const = 0;
};

class Model {
 public:
  Model(ModelConfig config, std::shared_ptr<const ModelFile> file, ModelWeights weights);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  // The file the weights are views of, as the loader's type (e.g.
  // SafetensorsModelFile, GgufModelFile), or null if it is of another.
  template <class File>
  const File* file_as() const {
    return dynamic_cast<const File*>(file_.get());
  }
  // Bytes the loaded checkpoint holds (ModelFile::held_bytes).
  std::size_t checkpoint_bytes() const { return file_->held_bytes(); }
  // Bytes of the weights the runtime uses (each tensor once).
  std::size_t weight_bytes() const { return weight_bytes_; }
  // Weight bytes read for each token of a decode step: every layer's, the
  // final norm and the LM head, not the embedding table (one row of it).
  std::size_t weight_bytes_per_token() const;

 private:
  ModelConfig config_;
  std::shared_ptr<const ModelFile> file_;
  ModelWeights weights_;
  std::size_t weight_bytes_ = 0;
};

// Loads a model: load_gguf_model for a .gguf file, else
// load_safetensors_model.
Model load_model(Device& device, const std::filesystem::path& path);

// Loads `dir`: config.json, and model.safetensors or
// model.safetensors.index.json with its shards. Aligned files are mapped
// (weights are used in place); others are read once into one buffer, as
// load_safetensors does. InvalidArgument for an unsupported architecture;
// FormatError for a broken config or checkpoint, and for a tensor that is
// missing, of a dtype other than F32/F16/BF16, or mis-shaped, naming the
// tensor and the shape the config implies.
Model load_safetensors_model(Device& device, const std::filesystem::path& dir);

// Loads a GGUF file: config from its metadata (gguf_model_config), weights
// bound by llama.cpp's tensor names (token_embd, blk.N.attn_q, ...), every
// tensor used in place from the mapping, quantized ones too (F32, F16,
// BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K). FormatError
// for a missing or mis-shaped tensor, and for one of another type, naming
// the tensor and its type; the refusal leaves every statistic as it was.
Model load_gguf_model(Device& device, const std::filesystem::path& path);

// Every check load_gguf_model makes before it maps the file, on a header
// alone: the config it would run with, or the error it would refuse with.
ModelConfig check_gguf_model(const io::GgufFile& header, const std::filesystem::path& path);

}  // namespace nuvec::lm
