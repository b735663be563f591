// config.json for the Llama family. transformers 4.x writes rope_theta and
// rope_scaling at the top level; 5.x writes them inside rope_parameters.
// Both are read. Every field is checked: a config is as hostile as any file.
#include "nuvec/lm/config.h"

#include <cmath>
#include <limits>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nuvec/input_file.h"
#include "lm/config_json.h"
#include "lm/config_limits.h"
#include "nuvec/error.h"

namespace nuvec::lm {
namespace {

using Json = nlohmann::json;

using detail::kMaxConfigBytes;
using detail::kMaxContext;
using detail::kMaxHeads;
using detail::kMaxHidden;
using detail::kMaxLayers;
using detail::kMaxVocab;

class ConfigReader {
 public:
  ConfigReader(const detail::PositionedJson& json, const std::filesystem::path& file) : json_(json), file_(file) {}

  // A reader for the fields of the object `name`, which messages call name.field.
  ConfigReader nested(std::string_view name) const {
    ConfigReader r = *this;
    r.prefix_ = fmt::format("{}{}.", prefix_, name);
    return r;
  }

  // FormatError at the offending value's offset (for a missing key, the
  // object that lacks it): "<file>: at byte N: <key> <what>".
  [[noreturn]] void fail(std::string_view field, const std::string& what) const {
    const std::string key = fmt::format("{}{}", prefix_, field);
    io::format_error(file_, json_.offset_of(key), fmt::format("{} {}", key, what));
  }

  const Json* find(const Json& object, std::string_view key) const {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }

  std::size_t integer(const Json& object, std::string_view key, std::size_t min, std::size_t max,
                      std::optional<std::size_t> fallback = std::nullopt) const {
    const Json* value = find(object, key);
    if (value == nullptr || value->is_null()) {
      if (fallback) return *fallback;
      fail(key, "is missing (an integer is required)");
    }
    if (!value->is_number_integer()) fail(key, fmt::format("must be an integer, not {}", value->dump()));
    if (value->is_number_unsigned()) {
      const auto v = value->get<std::uint64_t>();
      if (v >= min && v <= max) return static_cast<std::size_t>(v);
    }
    fail(key, fmt::format("is {}; it must be in [{}, {}]", value->dump(), min, max));
  }

  double number(const Json& object, std::string_view key, double min, double max,
                std::optional<double> fallback = std::nullopt) const {
    const Json* value = find(object, key);
    if (value == nullptr || value->is_null()) {
      if (fallback) return *fallback;
      fail(key, "is missing (a number is required)");
    }
    if (!value->is_number()) fail(key, fmt::format("must be a number, not {}", value->dump()));
    const double v = value->get<double>();
    if (!(v >= min && v <= max)) fail(key, fmt::format("is {}; it must be in [{}, {}]", value->dump(), min, max));
    return v;
  }

  bool boolean(const Json& object, std::string_view key, bool fallback) const {
    const Json* value = find(object, key);
    if (value == nullptr || value->is_null()) return fallback;
    if (!value->is_boolean()) fail(key, fmt::format("must be true or false, not {}", value->dump()));
    return value->get<bool>();
  }

  std::optional<std::string> string(const Json& object, std::string_view key) const {
    const Json* value = find(object, key);
    if (value == nullptr || value->is_null()) return std::nullopt;
    if (!value->is_string()) fail(key, fmt::format("must be a string, not {}", value->dump()));
    return value->get<std::string>();
  }

 private:
  const detail::PositionedJson& json_;
  const std::filesystem::path& file_;
  std::string prefix_;
};

Architecture read_architecture(const ConfigReader& r, const Json& root) {
  const Json* list = r.find(root, "architectures");
  if (list == nullptr || !list->is_array() || list->empty()) {
    r.fail("architectures", "must be a non-empty list such as [\"LlamaForCausalLM\"]");
  }
  std::string names;
  for (const Json& entry : *list) {
    if (!entry.is_string()) r.fail("architectures", fmt::format("holds {}, not a name", entry.dump()));
    const std::string name = entry.get<std::string>();
    for (Architecture a : {Architecture::llama, Architecture::mistral, Architecture::qwen2}) {
      if (name == architecture_name(a)) return a;
    }
    names += (names.empty() ? "" : ", ") + name;
  }
  r.fail("architectures", fmt::format("= {0}: {0} is not supported: nuvec runs LlamaForCausalLM, "
                                      "MistralForCausalLM and Qwen2ForCausalLM",
                                      names));
}

// RoPE: rope_parameters (transformers 5) or rope_theta + rope_scaling (4.x).
void read_rope(const ConfigReader& root_reader, const Json& root, ModelConfig& c) {
  const ConfigReader& r = root_reader;
  const Json* params = r.find(root, "rope_parameters");
  const Json* scaling = nullptr;
  std::string_view scaling_name = "rope_scaling";
  if (params != nullptr && !params->is_null()) {
    if (!params->is_object()) r.fail("rope_parameters", "must be an object");
    c.rope_theta = r.nested("rope_parameters")
                       .number(*params, "rope_theta", 1.0, 1e12, r.number(root, "rope_theta", 1.0, 1e12, 10000.0));
    scaling = params;
    scaling_name = "rope_parameters";
  } else {
    c.rope_theta = r.number(root, "rope_theta", 1.0, 1e12, 10000.0);
    scaling = r.find(root, "rope_scaling");
    if (scaling != nullptr && scaling->is_null()) scaling = nullptr;
    if (scaling != nullptr && !scaling->is_object()) r.fail("rope_scaling", "must be null or an object");
  }
  if (scaling == nullptr) return;
  const ConfigReader s_reader = r.nested(scaling_name);
  std::optional<std::string> type = s_reader.string(*scaling, "rope_type");
  if (!type) type = s_reader.string(*scaling, "type");
  if (!type || *type == "default") return;
  if (*type != "llama3") {
    s_reader.fail(scaling->contains("rope_type") ? "rope_type" : "type",
                  fmt::format("'{}' is not supported: nuvec implements 'default' and 'llama3'", *type));
  }
  Llama3RopeScaling s;
  s.factor = s_reader.number(*scaling, "factor", 1.0, 1e6);
  s.low_freq_factor = s_reader.number(*scaling, "low_freq_factor", 1e-6, 1e6);
  s.high_freq_factor = s_reader.number(*scaling, "high_freq_factor", 1e-6, 1e6);
  if (!(s.high_freq_factor > s.low_freq_factor)) {
    s_reader.fail("high_freq_factor", fmt::format("({}) must be above low_freq_factor ({})", s.high_freq_factor,
                                                  s.low_freq_factor));
  }
  s.original_max_position_embeddings =
      s_reader.integer(*scaling, "original_max_position_embeddings", 1, kMaxContext);
  c.rope_scaling = s;
}

// Sliding-window attention, per layer (0: none).
void read_sliding_window(const ConfigReader& r, const Json& root, ModelConfig& c) {
  c.sliding_window.assign(c.num_hidden_layers, 0);
  if (c.architecture == Architecture::llama) return;  // Llama has none
  const std::size_t window = r.integer(root, "sliding_window", 1, kMaxContext, 0);
  if (c.architecture == Architecture::mistral) {
    c.sliding_window.assign(c.num_hidden_layers, window);
    return;
  }
  // Qwen2: layer_types where written (transformers 5), else use_sliding_window
  // from max_window_layers on, as Qwen2Config derives layer_types.
  if (const Json* types = r.find(root, "layer_types"); types != nullptr && !types->is_null()) {
    if (!types->is_array() || types->size() != c.num_hidden_layers) {
      r.fail("layer_types", fmt::format("must list one type for each of the {} layers", c.num_hidden_layers));
    }
    for (std::size_t i = 0; i < c.num_hidden_layers; ++i) {
      const Json& t = (*types)[i];
      if (t == "full_attention") continue;
      if (t != "sliding_attention") {
        r.fail("layer_types", fmt::format("holds {}; nuvec knows full_attention and sliding_attention", t.dump()));
      }
      if (window == 0) r.fail("sliding_window", "is needed by layer_types' sliding_attention layers");
      c.sliding_window[i] = window;
    }
    return;
  }
  if (!r.boolean(root, "use_sliding_window", false) || window == 0) return;
  const std::size_t first = r.integer(root, "max_window_layers", 0, kMaxLayers, 28);
  for (std::size_t i = first; i < c.num_hidden_layers; ++i) c.sliding_window[i] = window;
}

}  // namespace

std::string_view architecture_name(Architecture arch) {
  switch (arch) {
    case Architecture::llama: return "LlamaForCausalLM";
    case Architecture::mistral: return "MistralForCausalLM";
    case Architecture::qwen2: return "Qwen2ForCausalLM";
  }
  return "?";
}

ModelConfig parse_model_config(std::string_view text, const std::filesystem::path& file) {
  const detail::PositionedJson json = detail::parse_positioned_json(text, file);
  const Json& root = json.root;
  if (!root.is_object()) io::format_error(file, 0, fmt::format("not a JSON object but {}", root.type_name()));
  const ConfigReader r(json, file);

  ModelConfig c;
  c.architecture = read_architecture(r, root);
  if (const auto act = r.string(root, "hidden_act"); act && *act != "silu") {
    r.fail("hidden_act", fmt::format("'{}' is not supported: nuvec implements silu (SwiGLU)", *act));
  }
  c.vocab_size = r.integer(root, "vocab_size", 1, kMaxVocab);
  c.hidden_size = r.integer(root, "hidden_size", 1, kMaxHidden);
  c.intermediate_size = r.integer(root, "intermediate_size", 1, kMaxHidden * 16);
  c.num_hidden_layers = r.integer(root, "num_hidden_layers", 1, kMaxLayers);
  c.num_attention_heads = r.integer(root, "num_attention_heads", 1, kMaxHeads);
  c.num_key_value_heads = r.integer(root, "num_key_value_heads", 1, kMaxHeads, c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    r.fail("num_key_value_heads", fmt::format("({}) must divide num_attention_heads ({})", c.num_key_value_heads,
                                              c.num_attention_heads));
  }
  std::optional<std::size_t> default_head_dim;
  if (c.hidden_size % c.num_attention_heads == 0) default_head_dim = c.hidden_size / c.num_attention_heads;
  c.head_dim = r.integer(root, "head_dim", 2, 4096, default_head_dim);
  if (c.head_dim % 2 != 0) r.fail("head_dim", fmt::format("({}) must be even for RoPE", c.head_dim));
  if (c.q_dim() > kMaxHidden) {
    r.fail("head_dim", fmt::format("× num_attention_heads = {} is past {}", c.q_dim(), kMaxHidden));
  }
  c.max_position_embeddings = r.integer(root, "max_position_embeddings", 1, kMaxContext);
  c.rms_norm_eps = r.number(root, "rms_norm_eps", 0.0, 1.0, 1e-6);
  read_rope(r, root, c);
  c.tie_word_embeddings = r.boolean(root, "tie_word_embeddings", false);
  if (c.architecture == Architecture::qwen2) {
    c.qkv_bias = true;  // Qwen2Attention always has q/k/v biases, and no o bias
  } else if (c.architecture == Architecture::llama) {
    c.attention_bias = r.boolean(root, "attention_bias", false);
    c.mlp_bias = r.boolean(root, "mlp_bias", false);
  }
  read_sliding_window(r, root, c);
  return c;
}

ModelConfig read_model_config(const std::filesystem::path& path) {
  const io::InputFile file(path);  // a FIFO or a directory is refused without blocking
  if (file.size() > kMaxConfigBytes) {
    io::format_error(path, 0, fmt::format("{} bytes is too large for a config.json ({} at most)", file.size(),
                                          kMaxConfigBytes));
  }
  std::string text(static_cast<std::size_t>(file.size()), '\0');
  file.read_exact(0, std::as_writable_bytes(std::span(text.data(), text.size())), "config.json");
  return parse_model_config(text, path);
}

}  // namespace nuvec::lm
