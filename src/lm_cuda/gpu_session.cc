// gpu::Session: the CPU Session's forward pass (src/lm/session.cc) on one
// CUDA stream,
//   x = embed(tokens)
//   per layer: x += o_proj(attention(rope(q_proj(norm(x))), cache))
//              x += down_proj(silu(gate_proj(norm(x))) * up_proj(norm(x)))
//   logits = lm_head(norm(x))
// with each residual add fused into the norm after it
// (launch_residual_rms_norm). Activations and the KV cache are the
// checkpoint's bf16 or f16, as the products and the attention kernels take
// them; every sum inside a kernel is f32.
//
// The residual stream x stays f32, as on the CPU: it is the running sum of
// 2 x layers updates, each small beside it. Rounded to bf16 (8 significant
// bits) after every add, an update below 1/256 of x would vanish outright
// and the error would grow with depth; in f32 the only roundings are each
// sublayer's output (once, to bf16) and the norm's, which do not compound.
// It costs 4 bytes x hidden per row, nothing beside the weights.
//
// A prompt's products go through cuBLASLt (gpu::Linear); a decode step's
// one-row products through nuvec's own kernels (decode_product.h: q/k/v in
// one launch, gate/up and SwiGLU in another), which read each weight once
// at close to the memory's speed where cuBLASLt's general kernels did not.
// Decode steps after the first are replayed as one CUDA graph (StepGraph):
// the kernels read the step's token and position from kStep, so one graph
// serves every position.
#include "nuvec/lm/gpu_session.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "cuda/cuda_error.h"
#include "lm/rope.h"
#include "lm_cuda/attention.h"
#include "lm_cuda/decode_product.h"
#include "lm_cuda/gpu_weights.h"
#include "lm_cuda/kv_layout.h"
#include "lm_cuda/linear.h"
#include "lm_cuda/ops.h"
#include "lm_cuda/step_graph.h"
#include "nuvec/cuda.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"
#include "nuvec/trace_tag.h"

namespace nuvec::lm::gpu {
namespace {

constexpr std::size_t kMaxInt = std::numeric_limits<int>::max();

// The activation buffers of one forward pass.
enum Slot { kX, kNormed, kQ, kK, kV, kAttention, kDelta, kGate, kUp, kTokens, kStep, kLogits, kBest, kSlotCount };

struct BufferSpec {
  std::string_view name;
  std::size_t rows = 0;
  std::size_t width = 0;          // elements per row
  std::size_t element_bytes = 0;  // 4 (f32, int32) or 2 (the activation dtype)
  const char* tag = "activations";
};

std::array<BufferSpec, kSlotCount> buffer_specs(const ModelConfig& c, std::size_t rows, bool all_logits) {
  return {{
      {"residual (f32)", rows, c.hidden_size, 4},
      {"normed", rows, c.hidden_size, 2},
      {"q", rows, c.q_dim(), 2},
      {"k", rows, c.kv_dim(), 2},
      {"v", rows, c.kv_dim(), 2},
      {"attention out", rows, c.q_dim(), 2},
      {"sublayer out", rows, c.hidden_size, 2},
      {"mlp gate", rows, c.intermediate_size, 2},
      {"mlp up", rows, c.intermediate_size, 2},
      {"token ids", 1, rows, 4},
      {"decode step (token, position)", 1, 2, 4},
      {"logits (f32)", all_logits ? rows : 1, c.vocab_size, 4, "logits"},
      {"greedy token", 1, 1, 4, "logits"},
  }};
}

std::size_t spec_bytes(const BufferSpec& s) { return std::max<std::size_t>(1, s.rows) * s.width * s.element_bytes; }

// Makes GPU `ordinal` the calling thread's current device: the stream, the
// cuBLASLt handle and every launch belong to the device current when made
// (nuvec's own calls restore the device they found, so a session on cuda:1
// cannot count on it staying current).
void bind(int ordinal) { cuda::check(cudaSetDevice(ordinal), "cudaSetDevice", "use the session's GPU"); }

// The session's stream, synchronized before it goes so that no kernel still
// reads a buffer being given back.
class Stream {
 public:
  explicit Stream(int ordinal) {
    bind(ordinal); cuda::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "create the session's stream"); }
  ~Stream() {
    if (stream_ == nullptr) return;
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  std::uintptr_t bits() const { return reinterpret_cast<std::uintptr_t>(stream_); }

 private:
  cudaStream_t stream_ = nullptr;
};

struct Activations {
  std::size_t rows = 0;
  bool all_logits = false;
  std::array<Buffer, kSlotCount> buffers;

  void* operator[](Slot s) const { return buffers[s].data(); }
};

// Bytes of a KV cache layer: keys then values.
std::size_t kv_layer_bytes(const ModelConfig& c, std::size_t context) {
  return 2 * kv_layer_elements(c.num_key_value_heads, context, c.head_dim) * 2;
}

}  // namespace

struct Session::State {
  explicit State(int gpu) : ordinal(gpu), stream(gpu) {}

  int ordinal = 0;
  // Declared before the buffers, so it goes after them: every buffer below
  // is given back once the stream's work is done (~State synchronizes first, too).
  Stream stream;
  const Weights::State* w = nullptr;
  Device* device = nullptr;
  SessionOptions options;
  std::optional<Linear> linear;
  std::vector<Buffer> kv_buffers;
  std::vector<KVLayer> kv;
  Buffer inv_freq;
  std::optional<DecodeScratch> decode_scratch;
  Activations act;
  std::vector<float> host_logits;
  std::size_t position = 0;
  const char* phase = nullptr;
  // Decode steps: the graph, and what says whether it still fits (the
  // activations it names are the same buffers: a new set, a new generation).
  StepGraph graph;
  std::size_t activations_made = 0;
  DecodeLaunches launches;
  std::array<std::int32_t, 2> step_host{};  // the step's token and position, copied to act[kStep]
  std::vector<std::size_t> graph_key;        // kept: a step's key without an allocation

  ~State() {
    if (stream.get() != nullptr) cudaStreamSynchronize(stream.get());
  }

  cudaStream_t s() const { return stream.get(); }
  const ModelConfig& config() const { return w->config; }
  std::size_t esize() const { return 2; }

  void enter(const char* next) {
    if (phase != next) device->mark(next);
    phase = next;
  }

  void ensure_activations(std::size_t rows, bool all_logits) {
    if (act.rows >= rows && (act.all_logits || !all_logits)) return;
    act = Activations{};  // the old ones back before new ones are taken
    Activations fresh;
    const auto specs = buffer_specs(config(), rows, all_logits);
    for (std::size_t i = 0; i < kSlotCount; ++i) {
      const Tag tag(*device, specs[i].tag);
      fresh.buffers[i] = device->new_buffer(spec_bytes(specs[i]), stream.bits());
    }
    fresh.rows = rows;
    fresh.all_logits = all_logits;
    act = std::move(fresh);
    ++activations_made;
  }

  void check_tokens(std::span<const std::int32_t> tokens) const {
    if (tokens.empty()) throw InvalidArgument("prefill needs at least one token");
    if (tokens.size() > options.context - position) {
      throw InvalidArgument(fmt::format("{} more tokens do not fit: the context holds {} positions and {} are used",
                                        tokens.size(), options.context, position));
    }
    const std::size_t vocab = config().vocab_size;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] < 0 || static_cast<std::size_t>(tokens[i]) >= vocab) {
        throw InvalidArgument(fmt::format("token id {} (at {}) is outside the vocabulary [0, {})", tokens[i], i, vocab));
      }
    }
  }

  // Queues one chunk at positions position .. position + rows - 1, through
  // the LM head (of every row with all_logits, else of the last). Returns
  // the rows whose logits are in act[kLogits]. A decode step (one row) reads
  // its token and position from act[kStep], copied there first, so that
  // the same launches serve every step of a graph (step_graph.h).
  std::size_t forward(std::span<const std::int32_t> tokens, bool all_logits) {
    const std::size_t rows = tokens.size();
    const std::size_t first = position;
    ensure_activations(rows, all_logits);
    if (rows > 1) {
      // From pageable memory: staged by the driver before the call returns.
      cuda::check(cudaMemcpyAsync(act[kTokens], tokens.data(), rows * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                                  s()),
                  "cudaMemcpyAsync", "copy the prompt's token ids");
      queue_forward(rows, first, all_logits, nullptr);
    } else {
      decode_step(tokens[0], first, all_logits);
    }
    position += rows;
    return all_logits ? rows : 1;
  }

  void decode_step(std::int32_t token, std::size_t first, bool all_logits) {
    step_host = {token, static_cast<std::int32_t>(first)};  // first < context, an int (the constructor checks)
    // 8 bytes from pageable memory: staged before the call returns, so the
    // next step may overwrite step_host.
    cuda::check(cudaMemcpyAsync(act[kStep], step_host.data(), sizeof step_host, cudaMemcpyHostToDevice, s()),
                "cudaMemcpyAsync", "copy the decode step's token and position");
    const auto* step = static_cast<const std::int32_t*>(act[kStep]);
    const auto queue = [&] { queue_forward(1, first, all_logits, step); };
    ++launches.steps;
    // The first step runs as launched: it loads the kernels' modules and plans
    // the products, neither of which a capture may do.
    if (!launches.graphs || launches.steps == 1) return queue();
    // The key: the buffers' generation. Every launch reads the step's
    // token and position from kStep, and decode attention splits the keys
    // from it in a grid sized for the whole cache, so one graph serves
    // every position.
    std::vector<std::size_t>& key = graph_key;
    key.assign(1, activations_made);
    try {
      graph.run(key, s(), queue);
    } catch (const IoError& e) {
      // A capture the driver refused (run() leaves the stream as it was):
      // this and later steps go kernel by kernel, and the reason is kept.
      if (graph.captures() == launches.captures && graph.replays() == launches.replays) {
        launches.graphs = false;
        launches.why_not = e.what();
        return queue();
      }
      throw;
    }
    launches.captures = graph.captures();
    launches.replays = graph.replays();
  }

  // Queues the layers and the LM head over act's first `rows` rows: token ids
  // in act[kTokens], or with `step` (one row) its token and position there.
  void queue_forward(std::size_t rows, std::size_t first, bool all_logits, const std::int32_t* step) {
    const ModelConfig& c = config();
    const Activations& a = act;
    const DType dt = w->dtype;
    const Element element = dt == DType::f16 ? Element::f16 : Element::bf16;
    const std::size_t h = c.hidden_size;
    const auto eps = static_cast<float>(c.rms_norm_eps);
    const RopeLayout layout = c.rope_interleaved ? RopeLayout::interleaved : RopeLayout::half_split;
    auto* x = static_cast<float*>(a[kX]);
    const int irows = static_cast<int>(rows), ih = static_cast<int>(h);
    const std::int32_t* ids = step != nullptr ? step : static_cast<const std::int32_t*>(a[kTokens]);
    const std::int32_t* first_at = step != nullptr ? step + 1 : nullptr;

    launch_embedding(w->embed_tokens.data, w->embed_tokens.stored, ih, ids, 0, irows, x, s());
    AttentionShape shape{c.num_attention_heads, c.num_key_value_heads, c.head_dim, 0};
    for (std::size_t i = 0; i < c.num_hidden_layers; ++i) {
      const GpuLayer& l = w->layers[i];
      // The previous layer's MLP output joins the residual here (none before layer 0).
      launch_residual_rms_norm(x, i == 0 ? nullptr : a[kDelta], irows, ih, l.input_norm.data, l.input_norm.stored, eps,
                               a[kNormed], element, s());
      const std::array<DecodeProduct, 3> qkv{{{l.q_proj, l.q_bias, a[kQ], c.q_dim()},
                                              {l.k_proj, l.k_bias, a[kK], c.kv_dim()},
                                              {l.v_proj, l.v_bias, a[kV], c.kv_dim()}}};
      if (!(rows == 1 && decode_products(a[kNormed], h, qkv, dt, dt, s()))) {
        for (const DecodeProduct& p : qkv) (*linear)(a[kNormed], rows, h, p.w, p.n, dt, p.bias, p.y, dt, s());
      }
      const auto* inv = reinterpret_cast<const float*>(inv_freq.data());
      rope(a[kQ], rows, c.q_dim(), c.num_attention_heads, c.head_dim, inv, first, layout, dt, s(), first_at);
      rope(a[kK], rows, c.kv_dim(), c.num_key_value_heads, c.head_dim, inv, first, layout, dt, s(), first_at);
      kv_store(kv[i], first, rows, a[kK], a[kV], s(), first_at);
      shape.window = c.sliding_window.empty() ? 0 : c.sliding_window[i];
      if (rows == 1) {
        decode_attention(a[kQ], first, kv[i], shape, a[kAttention], *decode_scratch, s(), first_at);
      } else {
        prefill_attention(a[kQ], rows, first, kv[i], shape, a[kAttention], s());
      }
      product(a[kAttention], rows, c.q_dim(), {l.o_proj, l.o_bias, a[kDelta], h}, dt);
      launch_residual_rms_norm(x, a[kDelta], irows, ih, l.post_attention_norm.data, l.post_attention_norm.stored, eps,
                               a[kNormed], element, s());
      const DecodeProduct gate{l.gate_proj, l.gate_bias, a[kGate], c.intermediate_size};
      const DecodeProduct up{l.up_proj, l.up_bias, a[kUp], c.intermediate_size};
      if (!(rows == 1 && decode_swiglu_product(a[kNormed], h, gate, up, a[kGate], dt, s()))) {
        (*linear)(a[kNormed], rows, h, gate.w, gate.n, dt, gate.bias, gate.y, dt, s());
        (*linear)(a[kNormed], rows, h, up.w, up.n, dt, up.bias, up.y, dt, s());
        swiglu(a[kGate], a[kUp], a[kGate], rows * c.intermediate_size, dt, s());
      }
      product(a[kGate], rows, c.intermediate_size, {l.down_proj, l.down_bias, a[kDelta], h}, dt);
    }
    launch_residual_rms_norm(x, a[kDelta], irows, ih, w->final_norm.data, w->final_norm.stored, eps, a[kNormed],
                             element, s());
    const std::size_t from = all_logits ? 0 : rows - 1;
    const std::size_t n = rows - from;
    const auto* normed = static_cast<const std::byte*>(a[kNormed]) + from * h * esize();
    product(normed, n, h, {w->lm_head, nullptr, a[kLogits], c.vocab_size}, DType::f32);
  }

  // y = x · wᵀ (+ bias) over `rows` rows of k: a decode step's own kernel
  // (decode_product.h) where it takes the shape, else cuBLASLt's.
  void product(const void* x, std::size_t rows, std::size_t k, const DecodeProduct& p, DType y_dtype) {
    const DType dt = w->dtype;
    if (rows == 1 && decode_products(x, k, std::span(&p, 1), dt, y_dtype, s())) return;
    (*linear)(x, rows, k, p.w, p.n, dt, p.bias, p.y, y_dtype, s());
  }

  // Reads the logits of the last `n` rows back (the one wait of a step).
  std::span<const float> read_logits(std::size_t n) {
    const std::size_t vocab = config().vocab_size;
    host_logits.resize(n * vocab);
    cuda::check(cudaMemcpyAsync(host_logits.data(), act[kLogits], n * vocab * sizeof(float), cudaMemcpyDeviceToHost, s()),
                "cudaMemcpyAsync", "read the logits back");
    cuda::check(cudaStreamSynchronize(s()), "cudaStreamSynchronize", "finish the forward pass");
    return host_logits;
  }

  std::int32_t read_greedy(std::size_t n) {
    const std::size_t vocab = config().vocab_size;
    const float* last = reinterpret_cast<const float*>(act.buffers[kLogits].data()) + (n - 1) * vocab;
    launch_argmax(last, static_cast<int>(vocab), static_cast<std::int32_t*>(act[kBest]), s());
    std::int32_t id = 0;
    cuda::check(cudaMemcpyAsync(&id, act[kBest], sizeof id, cudaMemcpyDeviceToHost, s()), "cudaMemcpyAsync",
                "read the greedy token back");
    cuda::check(cudaStreamSynchronize(s()), "cudaStreamSynchronize", "finish the forward pass");
    return id;
  }

  // Every chunk but the last through the layers, returning the last chunk's
  // row count once it has run too. `each` gets every row's logits.
  std::size_t run(std::span<const std::int32_t> tokens, const LogitsSink& each, const char* phase_name) {
    check_tokens(tokens);
    bind(ordinal);
    enter(phase_name);
    std::size_t n = 0;
    for (std::size_t done = 0; done < tokens.size();) {
      const std::size_t rows = std::min(options.prefill_chunk, tokens.size() - done);
      const std::size_t first = position;
      n = forward(tokens.subspan(done, rows), static_cast<bool>(each));
      done += rows;
      if (each) {
        const std::span<const float> all = read_logits(n);
        const std::size_t vocab = config().vocab_size;
        for (std::size_t r = 0; r < n; ++r) each(first + r, all.subspan(r * vocab, vocab));
      }
    }
    return n;
  }
};

Session::Session(const Weights& weights, SessionOptions options)
    : state_(std::make_unique<State>(weights.device().gpu_ordinal().value_or(0))) {
  const Weights::State& w = weights.state();
  const ModelConfig& c = w.config;
  if (options.context == 0) options.context = c.max_position_embeddings;
  if (options.context > c.max_position_embeddings) {
    throw InvalidArgument(fmt::format("a context of {} positions is past the model's max_position_embeddings ({})",
                                      options.context, c.max_position_embeddings));
  }
  if (options.prefill_chunk == 0) throw InvalidArgument("prefill_chunk must be at least 1");
  // The kernels index with ints: positions, rows and widths must fit one.
  const char* what = "gpu::Session";
  const std::array<std::pair<std::size_t, const char*>, 4> sizes{{{options.context, "the context"},
                                                                  {c.hidden_size, "hidden_size"},
                                                                  {c.vocab_size, "vocab_size"},
                                                                  {c.intermediate_size, "intermediate_size"}}};
  for (const auto& [value, name] : sizes) {
    if (value > kMaxInt) throw InvalidArgument(fmt::format("{}: {} ({}) is past the kernels' int", what, name, value));
  }
  options.prefill_chunk = std::min(options.prefill_chunk, options.context);
  State& s = *state_;
  s.w = &w;
  s.device = w.device;
  s.options = options;
  s.launches.graphs = options.decode_graphs;
  Device& device = *w.device;

  // What the session holds from its start, checked against the memory limit
  // before any of it is taken, so that a refusal leaves every statistic as
  // it was (a refusal part way would leave the buffers made so far in the
  // cache).
  const AttentionShape shape{c.num_attention_heads, c.num_key_value_heads, c.head_dim, 0};
  const auto rounded = [](std::size_t bytes) { return cuda::allocation_size(bytes).value_or(bytes); };
  std::size_t needed = rounded(Linear::kDefaultWorkspace) + rounded(DecodeScratch::bytes_for(shape)) +
                       rounded(c.head_dim / 2 * sizeof(float));
  needed += c.num_hidden_layers * rounded(kv_layer_bytes(c, options.context));
  const MemoryStats before = device.memory();
  if (before.active_with_mapped + needed > before.memory_limit) {
    throw OutOfMemory(fmt::format("cannot start a GPU session of {} positions: its KV cache, decode scratch and "
                                  "products' workspace take {}, and active {} + mapped {} would pass the memory "
                                  "limit of {} (Device::set_memory_limit, NUVEC_MEMORY_LIMIT_CUDA{}); ask for a "
                                  "shorter --context or raise the limit",
                                  options.context, format_bytes(needed), format_bytes(before.active),
                                  format_bytes(before.mapped), format_bytes(before.memory_limit),
                                  device.gpu_ordinal().value_or(0)),
                      needed, before);
  }

  bind(s.ordinal);
  s.linear.emplace(device, s.s());
  {
    const Tag tag(device, "kv_cache");
    const std::size_t elements = kv_layer_elements(c.num_key_value_heads, options.context, c.head_dim);
    for (std::size_t i = 0; i < c.num_hidden_layers; ++i) {
      Buffer& b = s.kv_buffers.emplace_back(device.new_buffer(kv_layer_bytes(c, options.context), s.stream.bits()));
      s.kv.push_back({b.data(), b.data() + elements * 2, options.context, c.num_key_value_heads, c.head_dim, w.dtype});
    }
  }
  s.decode_scratch.emplace(device, shape, s.s());
  {
    const Tag tag(device, "activations");  // the RoPE frequencies, read by every forward pass
    s.inv_freq = device.new_buffer(c.head_dim / 2 * sizeof(float), s.stream.bits());
  }
  std::vector<float> inv(c.head_dim / 2);
  rope::inverse_frequencies(c, inv.data());
  bind(s.ordinal);  // new_buffer may have switched it
  cuda::check(cudaMemcpyAsync(s.inv_freq.data(), inv.data(), inv.size() * sizeof(float), cudaMemcpyHostToDevice, s.s()),
              "cudaMemcpyAsync", "copy the RoPE frequencies");
  cuda::check(cudaStreamSynchronize(s.s()), "cudaStreamSynchronize", "start the session");  // `inv` goes now
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

std::span<const float> Session::prefill(std::span<const std::int32_t> tokens, const LogitsSink& each) {
  const std::size_t n = state_->run(tokens, each, "prefill");
  if (each) return std::span<const float>(state_->host_logits).last(state_->config().vocab_size);
  return state_->read_logits(n);
}

std::span<const float> Session::decode(std::int32_t token) {
  return state_->read_logits(state_->run({&token, 1}, {}, "decode"));
}

std::int32_t Session::prefill_greedy(std::span<const std::int32_t> tokens) {
  return state_->read_greedy(state_->run(tokens, {}, "prefill"));
}

std::int32_t Session::decode_greedy(std::int32_t token) { return state_->read_greedy(state_->run({&token, 1}, {}, "decode")); }

std::size_t Session::position() const { return state_->position; }
std::size_t Session::context() const { return state_->options.context; }
void Session::clear() { state_->position = 0; }
void Session::rewind(std::size_t position) {
  if (position > state_->position) {
    throw InvalidArgument(fmt::format("cannot rewind to position {}: the session holds {}", position,
                                      state_->position));
  }
  // The kernels read positions below the step's own only: no cache row is
  // cleared, and a graph replays unchanged (it reads the position from the device).
  state_->position = position;
}
void Session::release_activations() {
  bind(state_->ordinal);
  cuda::check(cudaStreamSynchronize(state_->s()), "cudaStreamSynchronize", "release the activations");
  state_->act = Activations{};
  ++state_->activations_made;  // the graph names them: the next step captures anew
}
DecodeLaunches Session::decode_launches() const { return state_->launches; }
std::size_t Session::kv_cache_bytes() const {
  std::size_t bytes = 0;
  for (const Buffer& b : state_->kv_buffers) bytes += cuda::allocation_size(b.size()).value_or(b.size());
  return bytes;
}

ActivationPlan Session::activation_plan(std::size_t rows, bool all_logits) const {
  ActivationPlan plan;
  for (const BufferSpec& spec : buffer_specs(state_->config(), rows, all_logits)) {
    const std::size_t bytes = cuda::allocation_size(spec_bytes(spec)).value_or(0);
    plan.total_bytes += bytes;
    if (bytes > plan.largest_bytes) {
      plan.largest_bytes = bytes;
      plan.largest_name = fmt::format("{} [{} x {}]", spec.name, spec.rows, spec.width);
    }
  }
  return plan;
}

bool gpu_available(int ordinal, std::string* why) {
  const auto say = [&](std::string text) {
    if (why != nullptr) *why = std::move(text);
    return false;
  };
  const int count = cuda_device_count();
  if (count == 0) {
    return say("no CUDA GPU is visible to this process (none on this machine, no NVIDIA driver, or "
               "CUDA_VISIBLE_DEVICES hides them)");
  }
  if (ordinal < 0 || ordinal >= count) {
    return say(fmt::format("there is no CUDA device {}: this process sees {} (cuda:0{})", ordinal, count,
                           count > 1 ? fmt::format(" .. cuda:{}", count - 1) : ""));
  }
  const cuda::DeviceInfo info = cuda::device_info(ordinal);
  // The kernels are sm_90 code and compute_90 PTX (sources.cmake): older GPUs cannot load them.
  if (info.compute_capability_major < 9) {
    return say(fmt::format("CUDA device {} ({}) is compute capability {}.{}; the LM kernels are built for 9.0 "
                           "(Hopper) and newer",
                           ordinal, info.name, info.compute_capability_major, info.compute_capability_minor));
  }
  return true;
}

}  // namespace nuvec::lm::gpu
