// The GPU path behind --device cuda. NUVEC_TOOL_GPU (tools/CMakeLists.txt)
// is set where the library has its CUDA LM runtime (nuvec_lm_cuda); without
// it every entry point answers with one sentence saying how to get it.
#include "gpu_generation.h"

#include <fmt/format.h>

#include "nuvec/error.h"

#if NUVEC_TOOL_GPU
#include "nuvec/lm/gpu_session.h"
#endif

namespace nuvec::tool {

#if NUVEC_TOOL_GPU

namespace {

class GpuGeneration final : public Generation {
 public:
  GpuGeneration(const lm::gpu::Weights& weights, lm::gpu::SessionOptions options) : session_(weights, options) {}
  std::span<const float> prefill(std::span<const std::int32_t> tokens, const lm::LogitsSink& each) override {
    return session_.prefill(tokens, each);
  }
  std::span<const float> decode(std::int32_t token) override { return session_.decode(token); }
  std::int32_t prefill_greedy(std::span<const std::int32_t> tokens) override {
    return session_.prefill_greedy(tokens);
  }
  std::int32_t decode_greedy(std::int32_t token) override { return session_.decode_greedy(token); }
  void release_activations() override { session_.release_activations(); }
  void rewind(std::size_t position) override { session_.rewind(position); }
  std::string decode_launch_note() const override {
    const lm::gpu::DecodeLaunches l = session_.decode_launches();
    if (l.steps == 0) return {};
    if (!l.graphs) {
      return l.why_not.empty() ? "each decode step launched kernel by kernel"
                               : fmt::format("each decode step launched kernel by kernel (a CUDA graph's capture "
                                             "failed: {})",
                                             l.why_not);
    }
    return fmt::format("{} of {} decode steps replayed as a CUDA graph ({} captured; the first step is launched "
                       "kernel by kernel)",
                       l.replays, l.steps, l.captures);
  }
  std::size_t kv_cache_bytes() const override { return session_.kv_cache_bytes(); }
  lm::ActivationPlan activation_plan(std::size_t rows) const override { return session_.activation_plan(rows); }

 private:
  lm::gpu::Session session_;
};

}  // namespace

struct GpuModel::Impl {
  lm::gpu::Weights weights;
};

bool gpu_path_available(int ordinal, std::string* why) { return lm::gpu::gpu_available(ordinal, why); }

GpuModel::GpuModel(Device& gpu, const lm::Model& model) : impl_(new Impl{lm::gpu::Weights(gpu, model)}) {}
GpuModel::~GpuModel() = default;
std::size_t GpuModel::weight_bytes() const { return impl_->weights.bytes(); }
std::string GpuModel::dtype_name() const { return std::string(impl_->weights.dtype_name()); }

std::unique_ptr<Generation> GpuModel::session(std::size_t context, std::size_t prefill_chunk) const {
  lm::gpu::SessionOptions options;
  options.context = context;
  options.prefill_chunk = prefill_chunk;
  return std::make_unique<GpuGeneration>(impl_->weights, options);
}

#else  // built without the CUDA LM runtime

namespace {

constexpr const char* kNoGpu =
    "this nuvec was built without CUDA support (the CUDA toolkit was not found when it was configured, or the "
    "LM runtime was left out); install the toolkit and configure again";

}  // namespace

struct GpuModel::Impl {};

bool gpu_path_available(int, std::string* why) {
  if (why != nullptr) *why = kNoGpu;
  return false;
}

GpuModel::GpuModel(Device&, const lm::Model&) { throw InvalidArgument(fmt::format("--device cuda: {}", kNoGpu)); }
GpuModel::~GpuModel() = default;
std::size_t GpuModel::weight_bytes() const { return 0; }
std::string GpuModel::dtype_name() const { return {}; }
std::unique_ptr<Generation> GpuModel::session(std::size_t, std::size_t) const {
  throw InvalidArgument(fmt::format("--device cuda: {}", kNoGpu));
}

#endif

}  // namespace nuvec::tool
