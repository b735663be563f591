// A ModelConfig from a GGUF file's metadata (llama.cpp's keys: see
// llama-arch.cpp's LLM_KV names), checked as hostile input like config.json.
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/io/gguf.h"
#include "nuvec/lm/config.h"

#include "lm/config_limits.h"

namespace nuvec::lm {
namespace {

// The same bounds as config.json's (lm/config_limits.h).
using detail::kMaxContext;
using detail::kMaxHeads;
using detail::kMaxHidden;
using detail::kMaxLayers;
using detail::kMaxVocab;

class MetadataReader {
 public:
  MetadataReader(const io::GgufFile& file, const std::filesystem::path& path, std::string arch)
      : file_(file), path_(path), arch_(std::move(arch)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw FormatError(fmt::format("{}: GGUF metadata {} {}", path_.string(), key, what), path_, 0);
  }

  // <arch>.<name> as an unsigned integer in [min, max].
  std::uint64_t integer(std::string_view name, std::uint64_t min, std::uint64_t max,
                        std::optional<std::uint64_t> fallback = std::nullopt) const {
    const std::string key = fmt::format("{}.{}", arch_, name);
    const io::GgufValue* v = file_.find(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      fail(key, "is missing (an integer is required)");
    }
    std::optional<std::uint64_t> n;
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            if constexpr (std::is_signed_v<T>) {
              if (x < 0) return;
            }
            n = static_cast<std::uint64_t>(x);
          }
        },
        *v);
    if (!n) fail(key, fmt::format("is a {}; a non-negative integer is required", gguf_value_type_name(gguf_value_type(*v))));
    if (*n < min || *n > max) fail(key, fmt::format("is {}; it must be in [{}, {}]", *n, min, max));
    return *n;
  }

  double number(std::string_view name, double min, double max, std::optional<double> fallback) const {
    const std::string key = fmt::format("{}.{}", arch_, name);
    const io::GgufValue* v = file_.find(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      fail(key, "is missing (a number is required)");
    }
    double d = NAN;
    if (const auto* f = std::get_if<float>(v)) d = *f;
    else if (const auto* g = std::get_if<double>(v)) d = *g;
    else fail(key, fmt::format("is a {}; float32 is required", gguf_value_type_name(gguf_value_type(*v))));
    if (!(d >= min && d <= max)) fail(key, fmt::format("is {}; it must be in [{}, {}]", d, min, max));
    return d;
  }

  bool has_key(std::string_view name) const { return file_.find(fmt::format("{}.{}", arch_, name)) != nullptr; }

  bool has_tensor(std::string_view name) const {
    return std::any_of(file_.tensors.begin(), file_.tensors.end(),
                       [&](const io::GgufTensorInfo& t) { return t.name == name; });
  }

  const io::GgufTensorInfo* tensor(std::string_view name) const {
    for (const io::GgufTensorInfo& t : file_.tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }

 private:
  const io::GgufFile& file_;
  const std::filesystem::path& path_;
  std::string arch_;
};

}  // namespace

ModelConfig gguf_model_config(const io::GgufFile& file, const std::filesystem::path& path) {
  const io::GgufValue* arch_value = file.find("general.architecture");
  const auto* arch = arch_value ? std::get_if<std::string>(arch_value) : nullptr;
  if (arch == nullptr) {
    throw FormatError(fmt::format("{}: GGUF metadata general.architecture is missing or not a string", path.string()),
                      path, 0);
  }
  ModelConfig c;
  if (*arch == "llama") {
    c.architecture = Architecture::llama;
    c.rope_interleaved = true;  // convert_hf_to_gguf.py permutes Llama's q/k rows
  } else if (*arch == "qwen2") {
    c.architecture = Architecture::qwen2;
  } else {
    throw InvalidArgument(fmt::format("{}: GGUF architecture '{}' is not supported: nuvec runs llama (Llama, "
                                      "Mistral) and qwen2 files",
                                      path.string(), *arch));
  }
  const MetadataReader r(file, path, *arch);
  c.hidden_size = r.integer("embedding_length", 1, kMaxHidden);
  c.intermediate_size = r.integer("feed_forward_length", 1, kMaxHidden * 16);
  c.num_hidden_layers = r.integer("block_count", 1, kMaxLayers);
  c.num_attention_heads = r.integer("attention.head_count", 1, kMaxHeads);
  c.num_key_value_heads = r.integer("attention.head_count_kv", 1, kMaxHeads, c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    r.fail(*arch + ".attention.head_count_kv", fmt::format("({}) must divide attention.head_count ({})",
                                                           c.num_key_value_heads, c.num_attention_heads));
  }
  std::optional<std::uint64_t> default_head_dim;
  if (c.hidden_size % c.num_attention_heads == 0) default_head_dim = c.hidden_size / c.num_attention_heads;
  c.head_dim = r.integer("attention.key_length", 2, 4096, default_head_dim);
  if (r.integer("attention.value_length", 2, 4096, c.head_dim) != c.head_dim) {
    r.fail(*arch + ".attention.value_length", "differs from attention.key_length; nuvec needs them equal");
  }
  if (c.head_dim % 2 != 0) r.fail(*arch + ".attention.key_length", fmt::format("({}) must be even", c.head_dim));
  if (c.q_dim() > kMaxHidden) r.fail(*arch + ".attention.key_length", "× head_count is too large");
  if (r.integer("rope.dimension_count", 2, 4096, c.head_dim) != c.head_dim) {
    throw InvalidArgument(fmt::format("{}: {}.rope.dimension_count is not the head size ({}): partial rotary "
                                      "embeddings are not supported",
                                      path.string(), *arch, c.head_dim));
  }
  c.max_position_embeddings = r.integer("context_length", 1, kMaxContext);
  c.rms_norm_eps = r.number("attention.layer_norm_rms_epsilon", 0.0, 1.0, 1e-6);
  c.rope_theta = r.number("rope.freq_base", 1.0, 1e12, 10000.0);
  if (r.has_key("rope.scaling.type") || r.has_tensor("rope_freqs.weight")) {
    throw InvalidArgument(fmt::format("{}: this file scales RoPE ({}.rope.scaling.type or rope_freqs.weight, as "
                                      "Llama 3.1 files do); nuvec runs GGUF files with plain RoPE only",
                                      path.string(), *arch));
  }
  // The vocabulary: <arch>.vocab_size where written, else token_embd's rows.
  const io::GgufTensorInfo* embd = r.tensor("token_embd.weight");
  if (embd == nullptr || embd->dims.size() != 2) {
    throw FormatError(fmt::format("{}: tensor token_embd.weight is missing or not 2-dimensional", path.string()),
                      path, 0);
  }
  c.vocab_size = r.integer("vocab_size", 1, kMaxVocab, std::min<std::uint64_t>(embd->dims[1], kMaxVocab + 1));
  if (c.vocab_size > kMaxVocab) r.fail("token_embd.weight", "has more rows than a vocabulary may");
  c.tie_word_embeddings = !r.has_tensor("output.weight");
  if (c.architecture == Architecture::qwen2) {
    c.qkv_bias = true;
  } else {
    c.attention_bias = r.has_tensor("blk.0.attn_output.bias");
    c.qkv_bias = !c.attention_bias && r.has_tensor("blk.0.attn_q.bias");
  }
  c.sliding_window.assign(c.num_hidden_layers, 0);
  return c;
}

ModelConfig read_config_of(const std::filesystem::path& model) {
  if (model.extension() == ".gguf" && !std::filesystem::is_directory(model)) {
    return gguf_model_config(io::read_gguf_header(model), model);
  }
  return read_model_config(model / "config.json");
}

}  // namespace nuvec::lm
