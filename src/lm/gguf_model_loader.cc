// Binds a GGUF file's tensors (llama.cpp's names) to the layers of a
// Llama-family decoder, in place: each view of the mapping becomes a Tensor
// of the runtime's dtype for its ggml type. Every tensor is checked (name,
// type, shape) on the header alone before the file is mapped, so a refused
// file changes no statistic.
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nuvec/error.h"
#include "nuvec/lm/model_files.h"

namespace nuvec::lm {
namespace {

constexpr std::string_view kSupported = "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K";

class GgufBinder {
 public:
  // Without `views`, bind() only checks and returns undefined tensors.
  GgufBinder(const io::GgufFile& header, const std::vector<io::TensorView>* views, const std::filesystem::path& path)
      : header_(header), views_(views), path_(path) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(fmt::format("{}: {}", path_.string(), what), path_, 0);
  }

  // The tensor `name`, of `shape` (outermost first). `quantizable`: whether
  // a quantized type is allowed (matrices; norms and biases are f32 in
  // llama.cpp's files and the runtime reads them element by element).
  Tensor bind(const std::string& name, const Shape& shape, const std::string& why, bool quantizable) const {
    std::size_t index = header_.tensors.size();
    for (std::size_t i = 0; i < header_.tensors.size(); ++i) {
      if (header_.tensors[i].name == name) index = i;
    }
    if (index == header_.tensors.size()) {
      fail(fmt::format("tensor {} is missing (expected {} for {})", name, shape.to_string(), why));
    }
    const io::GgufTensorInfo& info = header_.tensors[index];
    const std::optional<DType> dtype = from_ggml_type(info.type.id);
    if (!dtype) {
      fail(fmt::format("tensor {} is {}; nuvec computes with GGUF tensors of {}", name, info.type.name, kSupported));
    }
    if (is_quantized(*dtype) && !quantizable) {
      fail(fmt::format("tensor {} is {}; nuvec reads norms and biases as F32, F16 or BF16", name, info.type.name));
    }
    const std::vector<std::uint64_t> actual = info.shape();
    bool same = actual.size() == static_cast<std::size_t>(shape.rank());
    for (std::size_t d = 0; same && d < actual.size(); ++d) same = actual[d] == shape[static_cast<int>(d)];
    if (!same) {
      fail(fmt::format("tensor {} has shape [{}]; the metadata implies {} ({})", name, fmt::join(actual, ", "),
                       shape.to_string(), why));
    }
    if (actual.back() % block_elements(*dtype) != 0) {
      fail(fmt::format("tensor {} has rows of {} weights, not whole {} blocks", name, actual.back(), info.type.name));
    }
    return views_ == nullptr ? Tensor{} : Tensor::view_of((*views_)[index], *dtype);
  }

 private:
  const io::GgufFile& header_;
  const std::vector<io::TensorView>* views_;
  const std::filesystem::path& path_;
};

ModelWeights bind_gguf_weights(const ModelConfig& c, const io::GgufFile& header,
                               const std::vector<io::TensorView>* views, const std::filesystem::path& path) {
  const GgufBinder b(header, views, path);
  const std::size_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), ff = c.intermediate_size;
  const std::string heads = fmt::format("head_count {} × key_length {}", c.num_attention_heads, c.head_dim);
  const std::string kv_heads = fmt::format("head_count_kv {} × key_length {}", c.num_key_value_heads, c.head_dim);
  const std::string hidden = fmt::format("embedding_length {}", h);
  const std::string inter = fmt::format("feed_forward_length {}", ff);

  ModelWeights w;
  w.embed_tokens = b.bind("token_embd.weight", {c.vocab_size, h}, "the vocabulary × " + hidden, true);
  w.layers.reserve(c.num_hidden_layers);
  for (std::size_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    LayerWeights l;
    l.input_norm = b.bind(p + "attn_norm.weight", {h}, hidden, false);
    l.q_proj = b.bind(p + "attn_q.weight", {q, h}, heads + ", " + hidden, true);
    l.k_proj = b.bind(p + "attn_k.weight", {kv, h}, kv_heads + ", " + hidden, true);
    l.v_proj = b.bind(p + "attn_v.weight", {kv, h}, kv_heads + ", " + hidden, true);
    l.o_proj = b.bind(p + "attn_output.weight", {h, q}, hidden + ", " + heads, true);
    if (c.attention_bias || c.qkv_bias) {
      l.q_bias = b.bind(p + "attn_q.bias", {q}, heads, false);
      l.k_bias = b.bind(p + "attn_k.bias", {kv}, kv_heads, false);
      l.v_bias = b.bind(p + "attn_v.bias", {kv}, kv_heads, false);
    }
    if (c.attention_bias) l.o_bias = b.bind(p + "attn_output.bias", {h}, hidden, false);
    l.post_attention_norm = b.bind(p + "ffn_norm.weight", {h}, hidden, false);
    l.gate_proj = b.bind(p + "ffn_gate.weight", {ff, h}, inter + ", " + hidden, true);
    l.up_proj = b.bind(p + "ffn_up.weight", {ff, h}, inter + ", " + hidden, true);
    l.down_proj = b.bind(p + "ffn_down.weight", {h, ff}, hidden + ", " + inter, true);
    w.layers.push_back(std::move(l));
  }
  w.final_norm = b.bind("output_norm.weight", {h}, hidden, false);
  w.lm_head = c.tie_word_embeddings ? (views == nullptr ? Tensor{} : w.embed_tokens)
                                    : b.bind("output.weight", {c.vocab_size, h}, "the vocabulary × " + hidden, true);
  return w;
}

}  // namespace

ModelConfig check_gguf_model(const io::GgufFile& header, const std::filesystem::path& path) {
  ModelConfig config = gguf_model_config(header, path);
  bind_gguf_weights(config, header, nullptr, path);
  return config;
}

Model load_gguf_model(Device& device, const std::filesystem::path& path) {
  // Everything is checked on the header first; only then is the file mapped.
  ModelConfig config = check_gguf_model(io::read_gguf_header(path), path);
  const MemoryStats before = device.memory();
  io::GgufModel file = io::load_gguf(device, path);
  const MemoryStats after = device.memory();
  ModelWeights weights = bind_gguf_weights(config, file.header, &file.tensors, path);
  const std::size_t held = after.active_with_mapped - before.active_with_mapped;
  return Model(std::move(config), std::make_shared<const GgufModelFile>(std::move(file), held), std::move(weights));
}

}  // namespace nuvec::lm
