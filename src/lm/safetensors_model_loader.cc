// Loads a Hugging Face-style directory: binds its safetensors checkpoint's
// tensors to the layers of a Llama-family decoder, each checked against the
// shape the config implies before anything runs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lm/mlx_quantization.h"
#include "nuvec/error.h"
#include "nuvec/lm/model_files.h"
#include "nuvec/trace_tag.h"

namespace nuvec::lm {
namespace {

class WeightBinder {
 public:
  WeightBinder(const io::SafetensorsFile& file, const std::filesystem::path& dir,
               const std::optional<detail::MlxQuantization>& quantization)
      : file_(file), dir_(dir), quantization_(quantization) {}

  // The tensor `name`, which must have `shape`.
  Tensor bind(const std::string& name, const Shape& shape, const std::string& why) {
    const io::TensorView* view = file_.find(name);
    if (view == nullptr) {
      throw FormatError(fmt::format("{}: tensor {} is missing (expected {} for {})", dir_.string(), name,
                                    shape.to_string(), why),
                        dir_, 0);
    }
    if (name.ends_with(".weight")) {
      const std::string module = name.substr(0, name.size() - 7);
      if (const io::TensorView* scales = file_.find(module + ".scales")) {
        return bind_affine(module, *view, *scales, shape, why);
      }
    }
    if (!from_io_dtype(view->dtype)) {
      throw FormatError(fmt::format("{}: tensor {} is {}; nuvec computes with F32, F16 or BF16 weights",
                                    dir_.string(), name, io::dtype_name(view->dtype)),
                        dir_, 0);
    }
    Shape actual;
    for (std::uint64_t d : view->shape) {
      if (actual.rank() == Shape::kMaxRank) break;
      actual.push_back(static_cast<std::size_t>(d));
    }
    if (view->shape.size() != static_cast<std::size_t>(shape.rank()) || !(actual == shape)) {
      throw FormatError(fmt::format("{}: tensor {} has shape [{}]; the config implies {} ({})", dir_.string(), name,
                                    fmt::join(view->shape, ", "), shape.to_string(), why),
                        dir_, 0);
    }
    return Tensor::view_of(*view);
  }

 private:
  // MLX affine weights: `module`.weight (packed), .scales and .biases, with
  // the bits and group size config.json's quantization entry gives.
  Tensor bind_affine(const std::string& module, const io::TensorView& packed, const io::TensorView& scales,
                     const Shape& shape, const std::string& why) {
    const auto fail = [&](const std::string& reason) {
      throw FormatError(fmt::format("{}: {}.weight is MLX quantized (it has {}.scales) but {}", dir_.string(), module,
                                    module, reason),
                        dir_, 0);
    };
    if (!quantization_) fail("config.json has no quantization entry saying how (bits, group_size)");
    const std::optional<detail::MlxQuantParams> p = quantization_->of(module);
    if (!p) fail(fmt::format("config.json's quantization says {} is not quantized", module));
    const io::TensorView* biases = file_.find(module + ".biases");
    if (biases == nullptr) fail(fmt::format("{}.biases is missing (nuvec computes MLX's affine mode)", module));
    if (p->group_size != 32 && p->group_size != 64 && p->group_size != 128) {
      fail(fmt::format("its group size {} is not one nuvec computes with (32, 64, 128)", p->group_size));
    }
    Tensor t;
    try {
      t = Tensor::affine(packed, scales, *biases, p->bits, p->group_size);
    } catch (const InvalidArgument& e) {
      fail(fmt::format("with {} bits in groups of {}: {}", p->bits, p->group_size, e.what()));
    }
    if (!(t.shape() == shape)) {
      fail(fmt::format("it unpacks to {} with {} bits; the config implies {} ({})", t.shape().to_string(), p->bits,
                       shape.to_string(), why));
    }
    if (shape[1] % 64 != 0) fail(fmt::format("its rows of {} values are not a multiple of 64", shape[1]));
    return t;
  }

  const io::SafetensorsFile& file_;
  const std::filesystem::path& dir_;
  const std::optional<detail::MlxQuantization>& quantization_;
};

ModelWeights bind_weights(const ModelConfig& c, const io::SafetensorsFile& file, const std::filesystem::path& dir) {
  const std::optional<detail::MlxQuantization> quantization = detail::read_mlx_quantization(dir / "config.json");
  WeightBinder b(file, dir, quantization);
  const std::size_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), ff = c.intermediate_size;
  const std::string heads = fmt::format("num_attention_heads {} × head_dim {}", c.num_attention_heads, c.head_dim);
  const std::string kv_heads = fmt::format("num_key_value_heads {} × head_dim {}", c.num_key_value_heads, c.head_dim);
  const std::string hidden = fmt::format("hidden_size {}", h);
  const std::string inter = fmt::format("intermediate_size {}", ff);

  ModelWeights w;
  w.embed_tokens = b.bind("model.embed_tokens.weight", {c.vocab_size, h},
                          fmt::format("vocab_size {} × {}", c.vocab_size, hidden));
  w.layers.reserve(c.num_hidden_layers);
  for (std::size_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    LayerWeights l;
    l.input_norm = b.bind(p + "input_layernorm.weight", {h}, hidden);
    l.q_proj = b.bind(p + "self_attn.q_proj.weight", {q, h}, heads + ", " + hidden);
    l.k_proj = b.bind(p + "self_attn.k_proj.weight", {kv, h}, kv_heads + ", " + hidden);
    l.v_proj = b.bind(p + "self_attn.v_proj.weight", {kv, h}, kv_heads + ", " + hidden);
    l.o_proj = b.bind(p + "self_attn.o_proj.weight", {h, q}, hidden + ", " + heads);
    if (c.attention_bias || c.qkv_bias) {
      l.q_bias = b.bind(p + "self_attn.q_proj.bias", {q}, heads);
      l.k_bias = b.bind(p + "self_attn.k_proj.bias", {kv}, kv_heads);
      l.v_bias = b.bind(p + "self_attn.v_proj.bias", {kv}, kv_heads);
    }
    if (c.attention_bias) l.o_bias = b.bind(p + "self_attn.o_proj.bias", {h}, hidden);
    l.post_attention_norm = b.bind(p + "post_attention_layernorm.weight", {h}, hidden);
    l.gate_proj = b.bind(p + "mlp.gate_proj.weight", {ff, h}, inter + ", " + hidden);
    l.up_proj = b.bind(p + "mlp.up_proj.weight", {ff, h}, inter + ", " + hidden);
    l.down_proj = b.bind(p + "mlp.down_proj.weight", {h, ff}, hidden + ", " + inter);
    if (c.mlp_bias) {
      l.gate_bias = b.bind(p + "mlp.gate_proj.bias", {ff}, inter);
      l.up_bias = b.bind(p + "mlp.up_proj.bias", {ff}, inter);
      l.down_bias = b.bind(p + "mlp.down_proj.bias", {h}, hidden);
    }
    w.layers.push_back(std::move(l));
  }
  w.final_norm = b.bind("model.norm.weight", {h}, hidden);
  w.lm_head = c.tie_word_embeddings
                  ? w.embed_tokens
                  : b.bind("lm_head.weight", {c.vocab_size, h},
                           fmt::format("vocab_size {} × {}; tie_word_embeddings is false", c.vocab_size, hidden));
  return w;
}

}  // namespace

std::size_t SafetensorsModelFile::held_bytes() const {
  std::size_t n = 0;
  for (const auto& source : checkpoint_.sources()) n += source.mapped_bytes + source.buffer_bytes;
  return n;
}

Model load_safetensors_model(Device& device, const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) {
    throw IoError(fmt::format("{} is not a model directory (config.json and model.safetensors) or a .gguf file",
                              dir.string()),
                  dir, ENOTDIR);
  }
  ModelConfig config = read_model_config(dir / "config.json");
  io::SafetensorsFile file = io::load_safetensors(device, dir);
  ModelWeights weights = bind_weights(config, file, dir);
  auto held = std::make_shared<const SafetensorsModelFile>(std::move(file));
  return Model(std::move(config), std::move(held), std::move(weights));
}

}  // namespace nuvec::lm
