// A model's own bookkeeping: what its weights take, whatever file they are
// views of.
#include "nuvec/lm/model.h"

namespace nuvec::lm {
namespace {

// What a weight takes in the checkpoint (MLX weights: with their scales and biases).
std::size_t tensor_bytes(const Tensor& t) {
  if (!t.defined()) return 0;
  if (const Tensor::Affine* a = t.affine()) return t.bytes() + a->scales.bytes() + a->biases.bytes();
  return t.bytes();
}

std::size_t layer_bytes(const LayerWeights& l) {
  std::size_t n = 0;
  for (const Tensor* t : {&l.input_norm, &l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.q_bias, &l.k_bias,
                          &l.v_bias, &l.o_bias, &l.post_attention_norm, &l.gate_proj, &l.up_proj, &l.down_proj,
                          &l.gate_bias, &l.up_bias, &l.down_bias}) {
    n += tensor_bytes(*t);
  }
  return n;
}

}  // namespace

Model::Model(ModelConfig config, std::shared_ptr<const ModelFile> file, ModelWeights weights)
    : config_(std::move(config)), file_(std::move(file)), weights_(std::move(weights)) {
  weight_bytes_ = tensor_bytes(weights_.embed_tokens) + tensor_bytes(weights_.final_norm);
  if (!config_.tie_word_embeddings) weight_bytes_ += tensor_bytes(weights_.lm_head);
  for (const LayerWeights& l : weights_.layers) weight_bytes_ += layer_bytes(l);
}

std::size_t Model::weight_bytes_per_token() const {
  std::size_t n = tensor_bytes(weights_.final_norm) + tensor_bytes(weights_.lm_head);
  for (const LayerWeights& l : weights_.layers) n += layer_bytes(l);
  return n;
}

}  // namespace nuvec::lm
