// The built-in model's writer. Values come from splitmix64 seeded by the
// seed and each tensor's name, turned into floats with integer arithmetic
// and exact float operations only (no libm), so the bytes do not depend on
// the machine or the C library.
#include "nuvec/lm/demo_model.h"

#include <cstring>
#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nuvec/lm/splitmix64.h"
#include "nuvec/error.h"
#include "nuvec/io/safetensors.h"

namespace nuvec::lm {
namespace {

using Json = nlohmann::ordered_json;

enum class Init { weight, norm };

struct TensorSpec {
  std::string name;
  std::vector<std::uint64_t> shape;
  Init init = Init::weight;

  std::size_t elements() const {
    std::size_t n = 1;
    for (std::uint64_t d : shape) n *= static_cast<std::size_t>(d);
    return n;
  }
};

std::string model_type(Architecture a) {
  switch (a) {
    case Architecture::llama: return "llama";
    case Architecture::mistral: return "mistral";
    case Architecture::qwen2: return "qwen2";
  }
  return "llama";
}

std::string torch_dtype(DType d) {
  switch (d) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    default: break;  // the demo model is never quantized
  }
  return "float32";
}

std::string config_json(const DemoModelOptions& o) {
  const std::size_t head_dim = o.head_dim != 0 ? o.head_dim
                               : o.num_attention_heads != 0 ? o.hidden_size / o.num_attention_heads
                                                            : 0;
  Json j;
  j["architectures"] = {std::string(architecture_name(o.architecture))};
  j["model_type"] = model_type(o.architecture);
  j["vocab_size"] = o.vocab_size;
  j["hidden_size"] = o.hidden_size;
  j["intermediate_size"] = o.intermediate_size;
  j["num_hidden_layers"] = o.num_hidden_layers;
  j["num_attention_heads"] = o.num_attention_heads;
  j["num_key_value_heads"] = o.num_key_value_heads;
  j["head_dim"] = head_dim;
  j["hidden_act"] = "silu";
  j["max_position_embeddings"] = o.max_position_embeddings;
  j["rms_norm_eps"] = 1e-5;
  j["rope_theta"] = o.rope_theta;
  if (o.rope_scaling) {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", o.rope_scaling->factor},
                         {"low_freq_factor", o.rope_scaling->low_freq_factor},
                         {"high_freq_factor", o.rope_scaling->high_freq_factor},
                         {"original_max_position_embeddings", o.rope_scaling->original_max_position_embeddings}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  if (o.architecture == Architecture::llama) {
    j["attention_bias"] = false;
    j["mlp_bias"] = false;
  } else if (o.architecture == Architecture::mistral) {
    j["sliding_window"] = o.sliding_window == 0 ? Json(nullptr) : Json(o.sliding_window);
  } else {
    j["use_sliding_window"] = o.sliding_window != 0;
    j["sliding_window"] = o.sliding_window == 0 ? Json(nullptr) : Json(o.sliding_window);
    j["max_window_layers"] = 0;
  }
  j["tie_word_embeddings"] = o.tie_word_embeddings;
  j["torch_dtype"] = torch_dtype(o.dtype);
  j["initializer_range"] = o.init_std;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  j["nuvec_demo_seed"] = o.seed;
  return j.dump(2) + "\n";
}

std::vector<TensorSpec> tensor_specs(const ModelConfig& c) {
  const std::uint64_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), ff = c.intermediate_size;
  std::vector<TensorSpec> t;
  t.push_back({"model.embed_tokens.weight", {c.vocab_size, h}});
  for (std::size_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t.push_back({p + "input_layernorm.weight", {h}, Init::norm});
    t.push_back({p + "self_attn.q_proj.weight", {q, h}});
    t.push_back({p + "self_attn.k_proj.weight", {kv, h}});
    t.push_back({p + "self_attn.v_proj.weight", {kv, h}});
    if (c.qkv_bias || c.attention_bias) {
      t.push_back({p + "self_attn.q_proj.bias", {q}});
      t.push_back({p + "self_attn.k_proj.bias", {kv}});
      t.push_back({p + "self_attn.v_proj.bias", {kv}});
    }
    t.push_back({p + "self_attn.o_proj.weight", {h, q}});
    t.push_back({p + "post_attention_layernorm.weight", {h}, Init::norm});
    t.push_back({p + "mlp.gate_proj.weight", {ff, h}});
    t.push_back({p + "mlp.up_proj.weight", {ff, h}});
    t.push_back({p + "mlp.down_proj.weight", {h, ff}});
  }
  t.push_back({"model.norm.weight", {h}, Init::norm});
  if (!c.tie_word_embeddings) t.push_back({"lm_head.weight", {c.vocab_size, h}});
  return t;
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (char ch : s) {
    hash ^= static_cast<unsigned char>(ch);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::uint16_t f32_to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest even (values here are finite)
  return static_cast<std::uint16_t>(bits >> 16);
}

// The tensor's bytes in `dtype`.
std::vector<std::byte> tensor_bytes(const TensorSpec& spec, const DemoModelOptions& o) {
  const std::size_t n = spec.elements();
  std::vector<std::byte> bytes(n * dtype_size(o.dtype));
  std::uint64_t state = o.seed ^ fnv1a(spec.name);
  // Uniform on [-a, a] has standard deviation a / sqrt(3); sqrt(3) written out.
  const float half_width = spec.init == Init::norm ? 0.1f : static_cast<float>(o.init_std * 1.7320508075688772);
  const float center = spec.init == Init::norm ? 1.0f : 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t z = splitmix64_next(state);
    const float unit = static_cast<float>(z >> 40) * 0x1.0p-24f;  // [0, 1), exact
    const float v = center + (2.0f * unit - 1.0f) * half_width;
    switch (o.dtype) {
      case DType::f32: std::memcpy(bytes.data() + 4 * i, &v, 4); break;
      case DType::bf16: {
        const std::uint16_t b = f32_to_bf16(v);
        std::memcpy(bytes.data() + 2 * i, &b, 2);
        break;
      }
      case DType::f16: {
        const auto h = static_cast<_Float16>(v);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
        break;
      }
      default: break;  // the demo model is never quantized
    }
  }
  return bytes;
}

io::DType io_dtype(DType d) {
  switch (d) {
    case DType::f32: return io::DType::F32;
    case DType::f16: return io::DType::F16;
    case DType::bf16: return io::DType::BF16;
    default: break;  // the demo model is never quantized
  }
  return io::DType::F32;
}

void write_text_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw IoError(fmt::format("cannot write {}", tmp.string()), tmp, errno);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw IoError(fmt::format("cannot rename {} to {}: {}", tmp.string(), path.string(), ec.message()), path,
                        ec.value());
}

// Writes `specs` as one safetensors file.
void write_shard(const std::filesystem::path& path, const std::vector<const TensorSpec*>& specs,
                 const DemoModelOptions& o, std::size_t& done, std::size_t total) {
  std::vector<std::vector<std::byte>> data;
  std::vector<io::TensorView> views;
  data.reserve(specs.size());
  for (const TensorSpec* spec : specs) {
    data.push_back(tensor_bytes(*spec, o));
    done += data.back().size();
    if (o.progress) o.progress(done, total);
    io::TensorView v;
    v.name = spec->name;
    v.dtype = io_dtype(o.dtype);
    v.shape = spec->shape;
    v.bytes = {data.back().data(), data.back().size()};
    views.push_back(std::move(v));
  }
  io::save_safetensors(path, views, {{"format", "pt"}});  // transformers wants format=pt
}

}  // namespace

ModelConfig demo_model_config(const DemoModelOptions& options) {
  const std::string text = config_json(options);
  try {
    return parse_model_config(text, "config.json");
  } catch (const FormatError& e) {
    throw InvalidArgument(fmt::format("inconsistent demo model options: {}", e.what()));
  }
}

std::size_t demo_model_weight_bytes(const DemoModelOptions& options) {
  std::size_t n = 0;
  for (const TensorSpec& s : tensor_specs(demo_model_config(options))) n += s.elements() * dtype_size(options.dtype);
  return n;
}

void write_demo_model(const std::filesystem::path& dir, const DemoModelOptions& options) {
  const ModelConfig config = demo_model_config(options);
  const std::vector<TensorSpec> specs = tensor_specs(config);
  std::size_t done = 0;
  const std::size_t total_bytes = demo_model_weight_bytes(options);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw IoError(fmt::format("cannot create the directory {}: {}", dir.string(), ec.message()), dir, ec.value());
  }

  // Group tensors into shards of at most max_shard_bytes (a tensor larger
  // than that gets a shard of its own).
  std::vector<std::vector<const TensorSpec*>> shards(1);
  std::size_t shard_bytes = 0;
  for (const TensorSpec& s : specs) {
    const std::size_t bytes = s.elements() * dtype_size(options.dtype);
    if (options.max_shard_bytes != 0 && !shards.back().empty() && shard_bytes + bytes > options.max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(&s);
    shard_bytes += bytes;
  }

  // A stale file of the other layout would shadow or confuse the new one.
  std::filesystem::remove(dir / (options.max_shard_bytes == 0 ? "model.safetensors.index.json" : "model.safetensors"),
                          ec);
  if (options.max_shard_bytes == 0) {
    write_shard(dir / "model.safetensors", shards[0], options, done, total_bytes);
  } else {
    Json index;
    std::size_t total = 0;
    for (const TensorSpec& s : specs) total += s.elements() * dtype_size(options.dtype);
    index["metadata"] = {{"total_size", total}};
    Json& map = index["weight_map"];
    for (std::size_t i = 0; i < shards.size(); ++i) {
      const std::string name = fmt::format("model-{:05}-of-{:05}.safetensors", i + 1, shards.size());
      write_shard(dir / name, shards[i], options, done, total_bytes);
      for (const TensorSpec* s : shards[i]) map[s->name] = name;
    }
    write_text_atomically(dir / "model.safetensors.index.json", index.dump(2) + "\n");
  }
  write_text_atomically(dir / "config.json", config_json(options));
}

}  // namespace nuvec::lm
