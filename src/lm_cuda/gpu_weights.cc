// gpu::Weights: every tensor of a loaded model uploaded once, as stored, in
// one call of nuvec's upload engine (so that the copies overlap the staging
// and the statistics see one refusal or none). What the GPU kernels cannot
// read is refused before anything is uploaded.
#include "lm_cuda/gpu_weights.h"

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "lm/half_convert.h"
#include "lm/ops.h"
#include "nuvec/cuda.h"
#include "nuvec/error.h"
#include "nuvec/trace_tag.h"

namespace nuvec::lm::gpu {
namespace {

io::DType io_dtype(DType t) {
  switch (t) {
    case DType::f16: return io::DType::F16;
    case DType::bf16: return io::DType::BF16;
    default: return io::DType::F32;
  }
}

[[noreturn]] void refuse_type(const std::string& name, DType dtype, std::string_view role) {
  throw InvalidArgument(fmt::format(
      "cannot run this model on a GPU: {} ({}) is {}; the CUDA path takes bf16/f16 checkpoints so far "
      "(quantized GGUF and MLX weights, and f32 products, run on --device cpu)",
      name, role, dtype_name(dtype)));
}

std::uint16_t to_bits(DType t, float x) {
  if (t == DType::f16) return half::from_f32(x);
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

// The tensors to upload, in order, and where each role's lands.
class UploadList {
 public:
  explicit UploadList(DType dtype) : dtype_(dtype) {}

  // A linear weight: of the activation dtype, as the products take it.
  std::size_t linear(const std::string& name, const Tensor& t) {
    if (t.dtype() != dtype_) refuse_type(name, t.dtype(), "a matrix product's weight");
    return add(name, t);
  }
  // A norm weight or the embedding table: f32, f16 or bf16 as stored.
  std::size_t stored(const std::string& name, const Tensor& t) {
    if (t.dtype() != DType::f32 && t.dtype() != DType::f16 && t.dtype() != DType::bf16) {
      refuse_type(name, t.dtype(), "read element by element");
    }
    return add(name, t);
  }
  // A bias: the products add it in y's dtype, the activations'; one stored
  // otherwise is converted here (a few thousand values), once.
  std::size_t bias(const std::string& name, const Tensor& t) {
    if (!t.defined()) return kNone;
    if (t.dtype() == dtype_) return add(name, t);
    if (t.dtype() != DType::f32 && t.dtype() != DType::f16 && t.dtype() != DType::bf16) {
      refuse_type(name, t.dtype(), "a bias");
    }
    const std::size_t n = t.elements();
    std::vector<std::uint16_t>& bits = converted_.emplace_back(n);
    for (std::size_t i = 0; i < n; ++i) bits[i] = to_bits(dtype_, ops::weight_at(t, i));
    io::TensorView v;
    v.name = name;
    v.dtype = io_dtype(dtype_);
    v.shape = {n};
    v.bytes = std::as_bytes(std::span(bits));
    return push(std::move(v));
  }

  std::vector<io::TensorView>& views() { return views_; }
  static constexpr std::size_t kNone = ~std::size_t{0};

 private:
  std::size_t add(const std::string& name, const Tensor& t) {
    if (!t.contiguous()) throw InvalidArgument(fmt::format("cannot upload {}: its rows are not contiguous", name));
    // A tied LM head is the embedding table: uploaded once.
    if (const auto it = by_address_.find(t.data()); it != by_address_.end()) return it->second;
    io::TensorView v;
    v.name = name;
    v.dtype = io_dtype(t.dtype());
    for (int i = 0; i < t.rank(); ++i) v.shape.push_back(t.dim(i));
    v.bytes = std::span(t.data(), t.bytes());
    const std::size_t at = push(std::move(v));
    by_address_.emplace(t.data(), at);
    return at;
  }
  std::size_t push(io::TensorView v) {
    views_.push_back(std::move(v));
    return views_.size() - 1;
  }

  DType dtype_;
  std::vector<io::TensorView> views_;
  std::map<const std::byte*, std::size_t> by_address_;
  std::vector<std::vector<std::uint16_t>> converted_;  // the converted biases, alive through the upload
};

Stored stored_of(DType t) {
  return t == DType::f32 ? Stored::f32 : t == DType::f16 ? Stored::f16 : Stored::bf16;
}

}  // namespace

Weights::Weights(Device& gpu, const Model& model) : state_(std::make_unique<State>()) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  if (w.layers.empty()) throw InvalidArgument("gpu::Weights: the model has no layers");
  const DType dtype = w.layers[0].q_proj.dtype();
  if (dtype != DType::bf16 && dtype != DType::f16) refuse_type("layers.0.q_proj", dtype, "a matrix product's weight");

  UploadList list(dtype);
  struct LayerIndex {
    std::size_t input_norm, post_norm, q, k, v, o, gate, up, down, qb, kb, vb, ob, gb, ub, db;
  };
  const std::size_t embed = list.stored("embed_tokens", w.embed_tokens);
  std::vector<LayerIndex> index;
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& l = w.layers[i];
    const auto name = [&](const char* what) { return fmt::format("layers.{}.{}", i, what); };
    index.push_back({list.stored(name("input_layernorm"), l.input_norm),
                     list.stored(name("post_attention_layernorm"), l.post_attention_norm),
                     list.linear(name("q_proj"), l.q_proj), list.linear(name("k_proj"), l.k_proj),
                     list.linear(name("v_proj"), l.v_proj), list.linear(name("o_proj"), l.o_proj),
                     list.linear(name("gate_proj"), l.gate_proj), list.linear(name("up_proj"), l.up_proj),
                     list.linear(name("down_proj"), l.down_proj), list.bias(name("q_proj.bias"), l.q_bias),
                     list.bias(name("k_proj.bias"), l.k_bias), list.bias(name("v_proj.bias"), l.v_bias),
                     list.bias(name("o_proj.bias"), l.o_bias), list.bias(name("gate_proj.bias"), l.gate_bias),
                     list.bias(name("up_proj.bias"), l.up_bias), list.bias(name("down_proj.bias"), l.down_bias)});
  }
  const std::size_t final_norm = list.stored("norm", w.final_norm);
  const std::size_t lm_head = list.linear("lm_head", w.lm_head);

  // After the tensors' checks, so that what a model cannot do on any GPU is
  // said first (and tested on machines without one).
  if (!gpu.gpu_ordinal()) {
    throw InvalidArgument(fmt::format("gpu::Weights: device {} is not a CUDA device", gpu.name()));
  }
  State& s = *state_;
  s.device = &gpu;
  s.config = c;
  s.dtype = dtype;
  const auto start = std::chrono::steady_clock::now();
  {
    const Tag tag(gpu, "weights");
    s.checkpoint = cuda::upload(gpu, list.views());
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto& t = s.checkpoint.tensors();
  const auto at = [&](std::size_t i) -> const void* { return i == UploadList::kNone ? nullptr : t[i].buffer.data(); };
  const auto stored_at = [&](std::size_t i, const Tensor& tensor) { return StoredTensor{at(i), stored_of(tensor.dtype())}; };
  s.embed_tokens = stored_at(embed, w.embed_tokens);
  for (std::size_t i = 0; i < index.size(); ++i) {
    const LayerIndex& x = index[i];
    const LayerWeights& l = w.layers[i];
    s.layers.push_back({stored_at(x.input_norm, l.input_norm), stored_at(x.post_norm, l.post_attention_norm),
                        at(x.q), at(x.k), at(x.v), at(x.o), at(x.gate), at(x.up), at(x.down), at(x.qb), at(x.kb),
                        at(x.vb), at(x.ob), at(x.gb), at(x.ub), at(x.db)});
  }
  s.final_norm = stored_at(final_norm, w.final_norm);
  s.lm_head = at(lm_head);
  for (const cuda::DeviceTensor& d : t) s.bytes += cuda::allocation_size(d.buffer.size()).value_or(0);
}

Weights::~Weights() = default;
Weights::Weights(Weights&&) noexcept = default;
Weights& Weights::operator=(Weights&&) noexcept = default;

const ModelConfig& Weights::config() const { return state_->config; }
Device& Weights::device() const { return *state_->device; }
std::string_view Weights::dtype_name() const { return lm::dtype_name(state_->dtype); }
std::size_t Weights::bytes() const { return state_->bytes; }
double Weights::upload_seconds() const { return state_->seconds; }

}  // namespace nuvec::lm::gpu
