// The forward pass of a Llama-family decoder over one chunk of tokens:
//   x = embed(tokens)
//   per layer: x += o_proj(attention(rope(q_proj(norm(x))), cache))
//              x += down_proj(silu(gate_proj(norm(x))) * up_proj(norm(x)))
//   logits = lm_head(norm(x))
// with every buffer taken from the device once and reused.
#include "nuvec/lm/session.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "lm/attention.h"
#include "lm/kernels/thread_pool.h"
#include "lm/kv_cache.h"
#include "lm/ops.h"
#include "lm/rope.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"
#include "nuvec/trace_tag.h"

namespace nuvec::lm {
namespace {

// The activation buffers of one forward pass, in the order they are made.
enum Slot { kX, kNormed, kQ, kK, kV, kAttention, kGate, kUp, kLogits, kCos, kSin, kLinearScratch,
            kAttentionScratch, kSlotCount };

struct BufferSpec {
  std::string_view name;
  std::size_t rows = 0;
  std::size_t width = 0;  // f32 elements per row (bytes / 4 for raw scratch)
};

std::array<BufferSpec, kSlotCount> buffer_specs(const Model& model, std::size_t rows, bool all_logits) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  std::size_t linear_scratch = ops::linear_workspace_bytes(all_logits ? rows : 1, w.lm_head);
  for (const LayerWeights& l : w.layers) {
    for (const Tensor* t : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
      linear_scratch = std::max(linear_scratch, ops::linear_workspace_bytes(rows, *t));
    }
  }
  const attention::Shape shape{c.num_attention_heads, c.num_key_value_heads, c.head_dim, 0};
  const std::size_t threads = static_cast<std::size_t>(kernels::threads());
  return {{
      {"residual", rows, c.hidden_size},
      {"normed", rows, c.hidden_size},
      {"q", rows, c.q_dim()},
      {"k", rows, c.kv_dim()},
      {"v", rows, c.kv_dim()},
      {"attention out", rows, c.q_dim()},
      {"mlp gate", rows, c.intermediate_size},
      {"mlp up", rows, c.intermediate_size},
      {"logits", all_logits ? rows : 1, c.vocab_size},
      {"rope cos", rows, c.head_dim / 2},
      {"rope sin", rows, c.head_dim / 2},
      {"linear scratch", 1, (linear_scratch + 3) / 4},
      {"attention scratch", threads, attention::scratch_floats(shape)},
  }};
}

// What a trace calls each buffer (nuvec/trace_tag.h).
const char* slot_tag(Slot s) {
  switch (s) {
    case kLogits: return "logits";
    case kLinearScratch:
    case kAttentionScratch: return "scratch";
    default: return "activations";
  }
}

struct Activations {
  std::size_t rows = 0;
  bool all_logits = false;
  std::size_t threads = 0;
  std::array<Tensor, kSlotCount> buffers;

  float* operator[](Slot s) const { return buffers[s].mutable_f32(); }
};

}  // namespace

struct Session::State {
  Device* device = nullptr;
  const Model* model = nullptr;
  SessionOptions options;
  KVCache cache;
  Tensor inv_freq;  // [head_dim / 2]
  std::size_t position = 0;
  Activations act;
  const char* phase = nullptr;  // the phase last marked in the trace: "prefill" or "decode"

  // Marks the trace where the session turns from prefill to decode or back
  // (not at every token: a phase is a run of calls).
  void enter(const char* next) {
    if (phase != next) device->mark(next);
    phase = next;
  }

  void ensure_activations(std::size_t rows, bool all_logits) {
    const auto threads = static_cast<std::size_t>(kernels::threads());
    if (act.rows >= rows && (act.all_logits || !all_logits) && act.threads >= threads) return;
    act = Activations{};  // give the old ones back before taking new ones
    Activations fresh;
    const auto specs = buffer_specs(*model, rows, all_logits);
    for (std::size_t s = 0; s < kSlotCount; ++s) {
      const Tag tag(*device, slot_tag(static_cast<Slot>(s)));
      fresh.buffers[s] =
          Tensor::empty(*device, DType::f32, Shape{std::max<std::size_t>(1, specs[s].rows), specs[s].width});
    }
    fresh.rows = rows;
    fresh.all_logits = all_logits;
    fresh.threads = threads;
    act = std::move(fresh);
  }

  // Checks `tokens`, marks the phase, and runs them through in chunks.
  std::span<const float> run(std::span<const std::int32_t> tokens, const LogitsSink& each, const char* phase_name);

  // One chunk of tokens at positions position .. position + rows - 1.
  std::span<const float> forward(std::span<const std::int32_t> tokens, const LogitsSink& each) {
    const ModelConfig& c = model->config();
    const ModelWeights& w = model->weights();
    const std::size_t rows = tokens.size();
    const std::size_t first = position;
    ensure_activations(rows, static_cast<bool>(each));
    const Activations& a = act;
    void* scratch = a.buffers[kLinearScratch].mutable_data();
    const std::size_t h = c.hidden_size;
    const attention::Shape shape{c.num_attention_heads, c.num_key_value_heads, c.head_dim, 0};
    const bool exact = options.precision == Precision::exact;

    ops::embedding(w.embed_tokens, tokens, a[kX]);
    rope::angles(inv_freq.f32(), c.head_dim / 2, first, rows, a[kCos], a[kSin]);
    for (std::size_t i = 0; i < c.num_hidden_layers; ++i) {
      const LayerWeights& l = w.layers[i];
      ops::rms_norm(a[kX], rows, h, l.input_norm, c.rms_norm_eps, a[kNormed]);
      ops::linear(a[kNormed], rows, l.q_proj, l.q_bias, a[kQ], scratch, exact);
      ops::linear(a[kNormed], rows, l.k_proj, l.k_bias, a[kK], scratch, exact);
      ops::linear(a[kNormed], rows, l.v_proj, l.v_bias, a[kV], scratch, exact);
      const auto rotate = c.rope_interleaved ? rope::apply_interleaved : rope::apply;
      rotate(a[kQ], rows, c.q_dim(), c.num_attention_heads, c.head_dim, a[kCos], a[kSin]);
      rotate(a[kK], rows, c.kv_dim(), c.num_key_value_heads, c.head_dim, a[kCos], a[kSin]);
      cache.store(i, first, rows, a[kK], a[kV]);
      attention::Shape layer_shape = shape;
      layer_shape.window = c.sliding_window[i];
      attention::attend(a[kQ], rows, first, cache, i, layer_shape, a[kAttention], a[kAttentionScratch],
                        exact ? kernels::Precision::exact : kernels::Precision::fast);
      ops::linear(a[kAttention], rows, l.o_proj, l.o_bias, a[kNormed], scratch, exact);
      ops::add(a[kX], a[kNormed], rows * h);

      ops::rms_norm(a[kX], rows, h, l.post_attention_norm, c.rms_norm_eps, a[kNormed]);
      ops::linear(a[kNormed], rows, l.gate_proj, l.gate_bias, a[kGate], scratch, exact);
      ops::linear(a[kNormed], rows, l.up_proj, l.up_bias, a[kUp], scratch, exact);
      ops::swiglu(a[kGate], a[kUp], rows * c.intermediate_size);
      ops::linear(a[kGate], rows, l.down_proj, l.down_bias, a[kNormed], scratch, exact);
      ops::add(a[kX], a[kNormed], rows * h);
    }
    position += rows;

    // Logits of the last row only, unless every row's was asked for.
    const std::size_t from = each ? 0 : rows - 1;
    const std::size_t n = rows - from;
    ops::rms_norm(a[kX] + from * h, n, h, w.final_norm, c.rms_norm_eps, a[kNormed]);
    ops::linear(a[kNormed], n, w.lm_head, Tensor{}, a[kLogits], scratch, exact);
    const float* logits = a[kLogits];
    if (each) {
      for (std::size_t r = 0; r < n; ++r) each(first + r, {logits + r * c.vocab_size, c.vocab_size});
    }
    return {logits + (n - 1) * c.vocab_size, c.vocab_size};
  }
};

Session::Session(Device& device, const Model& model, SessionOptions options) : state_(std::make_unique<State>()) {
  const ModelConfig& c = model.config();
  if (options.context == 0) options.context = c.max_position_embeddings;
  if (options.context > c.max_position_embeddings) {
    throw InvalidArgument(fmt::format("a context of {} positions is past the model's max_position_embeddings ({})",
                                      options.context, c.max_position_embeddings));
  }
  if (options.prefill_chunk == 0) throw InvalidArgument("prefill_chunk must be at least 1");
  State& s = *state_;
  s.device = &device;
  s.model = &model;
  s.options = std::move(options);
  {
    const Tag tag(device, "activations");  // the rope table, read by every forward pass
    s.inv_freq = Tensor::empty(device, DType::f32, Shape{c.head_dim / 2});
  }
  rope::inverse_frequencies(c, s.inv_freq.mutable_f32());
  const Tag tag(device, "kv_cache");
  s.cache = KVCache(device, c, s.options.context, attention::kKeys, s.options.kv_cache);
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

std::span<const float> Session::prefill(std::span<const std::int32_t> tokens, const LogitsSink& each) {
  return state_->run(tokens, each, "prefill");
}

std::span<const float> Session::decode(std::int32_t token) { return state_->run({&token, 1}, {}, "decode"); }

std::span<const float> Session::State::run(std::span<const std::int32_t> tokens, const LogitsSink& each,
                                           const char* phase_name) {
  State& s = *this;
  if (tokens.empty()) throw InvalidArgument("prefill needs at least one token");
  if (tokens.size() > s.options.context - s.position) {
    throw InvalidArgument(fmt::format("{} more tokens do not fit: the context holds {} positions and {} are used",
                                      tokens.size(), s.options.context, s.position));
  }
  const std::size_t vocab = s.model->config().vocab_size;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || static_cast<std::size_t>(tokens[i]) >= vocab) {
      throw InvalidArgument(
          fmt::format("token id {} (at {}) is outside the vocabulary [0, {})", tokens[i], i, vocab));
    }
  }
  s.enter(phase_name);
  std::span<const float> logits;
  for (std::size_t done = 0; done < tokens.size();) {
    const std::size_t n = std::min(s.options.prefill_chunk, tokens.size() - done);
    logits = s.forward(tokens.subspan(done, n), each);
    done += n;
    if (s.options.progress) s.options.progress(done, tokens.size());
  }
  return logits;
}

std::size_t Session::position() const { return state_->position; }
std::size_t Session::context() const { return state_->options.context; }
void Session::clear() { state_->position = 0; }
void Session::rewind(std::size_t position) {
  if (position > state_->position) {
    throw InvalidArgument(fmt::format("cannot rewind to position {}: the session holds {}", position,
                                      state_->position));
  }
  state_->position = position;  // positions past it are never read, and are written again as they come
}
void Session::release_activations() { state_->act = Activations{}; }
std::size_t Session::kv_cache_bytes() const { return state_->cache.bytes(); }

ActivationPlan Session::activation_plan(std::size_t rows, bool all_logits) const {
  ActivationPlan plan;
  for (const BufferSpec& spec : buffer_specs(*state_->model, rows, all_logits)) {
    const std::size_t bytes = allocation_size(std::max<std::size_t>(1, spec.rows) * spec.width * 4).value_or(0);
    plan.total_bytes += bytes;
    if (bytes > plan.largest_bytes) {
      plan.largest_bytes = bytes;
      plan.largest_name = fmt::format("{} [{} x {}]", spec.name, spec.rows, spec.width);
    }
  }
  return plan;
}

}  // namespace nuvec::lm
