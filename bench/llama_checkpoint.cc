#include "llama_checkpoint.h"

#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nuvec/io/safetensors.h"
#include "nuvec/nuvec.h"

namespace nuvec::bench {

std::vector<TensorShape> llama_tensor_shapes(int layers) {
  constexpr std::uint64_t kHidden = 2048, kIntermediate = 5632, kKv = 256, kVocab = 32000;
  std::vector<TensorShape> shapes = {{"model.embed_tokens.weight", {kVocab, kHidden}}};
  for (int i = 0; i < layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    shapes.push_back({p + "input_layernorm.weight", {kHidden}});
    shapes.push_back({p + "self_attn.q_proj.weight", {kHidden, kHidden}});
    shapes.push_back({p + "self_attn.k_proj.weight", {kKv, kHidden}});
    shapes.push_back({p + "self_attn.v_proj.weight", {kKv, kHidden}});
    shapes.push_back({p + "self_attn.o_proj.weight", {kHidden, kHidden}});
    shapes.push_back({p + "post_attention_layernorm.weight", {kHidden}});
    shapes.push_back({p + "mlp.gate_proj.weight", {kIntermediate, kHidden}});
    shapes.push_back({p + "mlp.up_proj.weight", {kIntermediate, kHidden}});
    shapes.push_back({p + "mlp.down_proj.weight", {kHidden, kIntermediate}});
  }
  shapes.push_back({"model.norm.weight", {kHidden}});
  shapes.push_back({"lm_head.weight", {kVocab, kHidden}});
  return shapes;
}

namespace {

std::uint64_t bytes_of(const TensorShape& t) {
  std::uint64_t n = 2;  // bf16
  for (std::uint64_t d : t.shape) n *= d;
  return n;
}

// Deterministic filler: xorshift64, so both files carry identical bytes.
void fill(std::span<std::byte> out, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  std::size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out.data() + i, &x, 8);
  }
  for (; i < out.size(); ++i) out[i] = std::byte{0x3c};
}

void write_unaligned(const std::filesystem::path& path, const std::vector<TensorShape>& shapes,
                     const std::vector<std::span<const std::byte>>& data) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    header[shapes[i].name] = {{"dtype", "BF16"}, {"shape", shapes[i].shape}, {"data_offsets", {offset, offset + data[i].size()}}};
    offset += data[i].size();
  }
  std::string text = header.dump();
  if (text.size() % 2 == 0) text += ' ';  // odd: the data start is odd, so no bf16 tensor is aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::uint64_t n = text.size();
  out.write(reinterpret_cast<const char*>(&n), 8);  // little-endian on x86-64
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& bytes : data) out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
}

}  // namespace

void write_llama_checkpoints(const std::filesystem::path& aligned, const std::filesystem::path& unaligned,
                             int layers) {
  if (std::filesystem::exists(aligned) && std::filesystem::exists(unaligned)) return;
  const std::vector<TensorShape> shapes = llama_tensor_shapes(layers);
  auto device = Device::create_cpu();
  std::vector<Buffer> buffers;
  std::vector<io::TensorView> views;
  std::vector<std::span<const std::byte>> data;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    Buffer b = device->new_buffer(bytes_of(shapes[i]));
    fill(b.bytes(), i);
    data.emplace_back(b.data(), b.size());
    views.push_back({shapes[i].name, io::DType::BF16, shapes[i].shape, data.back(), nullptr});
    buffers.push_back(std::move(b));
  }
  io::save_safetensors(aligned, views, {{"format", "pt"}});
  write_unaligned(unaligned, shapes, data);
}

}  // namespace nuvec::bench
