// The GPU session (nuvec/lm/gpu_session.h) against the CPU Session on the
// same small random bf16 model (tests/lm's tiny_model: 2 layers, GQA 4/2,
// logits of order 1), and its memory contract on the GPU device.
//
// The bound on a logit: 4% of the largest |logit| of its row. Why: the CPU
// (Precision::exact, f32 KV cache) keeps every activation f32; the GPU
// rounds each to bf16 (2^-9 relative) where the next kernel reads it: the
// normed input of q/k/v, q, k, v, the attention output, o_proj's output,
// the normed MLP input, gate, up, their SwiGLU, down's output, the final
// norm: about a dozen roundings on the way to a logit, twice over two
// layers, each moving its value by up to 0.2%. They do not all align, but
// a logit is a sum of 32 products with cancellation, so its error is a
// fraction of the row's scale, not of itself: 4% of the row's largest
// leaves room for ~20 roundings adding up, and stays far below the
// logits' spread (which is what greedy decoding reads: two different rows
// differ by tens of percent of their scale).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gpu_support.h"
#include "lm/lm_test_support.h"
#include "nuvec/cuda.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/lm/gpu_session.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/sampler.h"
#include "nuvec/lm/session.h"

namespace {

namespace gpu = nuvec::lm::gpu;
using nuvec::lm::DType;

constexpr double kRowFraction = 0.04;

// Positions a test runs through; the tiny model holds 256.
constexpr std::size_t kPrompt = 37;  // odd, past one 32-row prefill tile
constexpr std::size_t kDecode = 12;

std::vector<std::int32_t> prompt_tokens(std::size_t n, std::size_t vocab) {
  std::vector<std::int32_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<std::int32_t>((i * 37 + 11) % vocab);
  return t;
}

double row_scale(std::span<const float> row) {
  double m = 0;
  for (float x : row) m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

// The gap between a row's largest and second largest value.
double top2_gap(std::span<const float> row) {
  float a = -INFINITY, b = -INFINITY;
  for (float x : row) {
    if (x > a) {
      b = a;
      a = x;
    } else if (x > b) {
      b = x;
    }
  }
  return static_cast<double>(a) - b;
}

void expect_row_close(std::span<const float> got, std::span<const float> want, double fraction,
                      const std::string& what) {
  const double bound = fraction * row_scale(want);
  nuvec_test::gpu::expect_within(got, want, [&](std::size_t) { return bound; }, what);
}

std::filesystem::path gguf_fixtures() {
  if (const char* dir = std::getenv("NUVEC_GGUF_FIXTURES"); dir != nullptr && *dir != '\0') return dir;
  return NUVEC_LM_CUDA_GGUF_FIXTURES;
}

// Refusals that come before any device memory is touched run without a GPU.
TEST(GpuWeightsRefusal, QuantizedModelIsRefusedNamingTheTensorAndItsType) {
  nuvec::Device& cpu = nuvec::Device::cpu();
  const nuvec::lm::Model model = nuvec::lm::load_model(cpu, gguf_fixtures() / "llama-Q4_K.gguf");
  const nuvec::MemoryStats before = cpu.memory();
  try {
    gpu::Weights weights(cpu, model);
    FAIL() << "a Q4_K model was taken";
  } catch (const nuvec::InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("q4_k"), std::string::npos) << what;
    EXPECT_NE(what.find("the CUDA path takes bf16/f16 checkpoints so far"), std::string::npos) << what;
    EXPECT_NE(what.find("layers.0.q_proj"), std::string::npos) << what;
  }
  EXPECT_EQ(cpu.memory(), before);
}

TEST(GpuWeightsRefusal, F32ProductsAreRefused) {
  nuvec_test::TempDir dir;
  nuvec::lm::write_demo_model(dir.path(), nuvec_test::tiny_model(DType::f32));
  const nuvec::lm::Model model = nuvec::lm::load_model(nuvec::Device::cpu(), dir.path());
  try {
    gpu::Weights weights(nuvec::Device::cpu(), model);
    FAIL() << "an f32 model was taken";
  } catch (const nuvec::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("is f32"), std::string::npos) << e.what();
  }
}

TEST(GpuWeightsRefusal, ACpuDeviceIsRefused) {
  nuvec_test::TempDir dir;
  nuvec::lm::write_demo_model(dir.path(), nuvec_test::tiny_model(DType::bf16));
  const nuvec::lm::Model model = nuvec::lm::load_model(nuvec::Device::cpu(), dir.path());
  EXPECT_THROW(gpu::Weights(nuvec::Device::cpu(), model), nuvec::InvalidArgument);
}

TEST(GpuAvailable, SaysWhyWhenItIsNot) {
  std::string why;
  if (gpu::gpu_available(0, &why)) {
    EXPECT_FALSE(gpu::gpu_available(nuvec::cuda_device_count(), &why));
    EXPECT_NE(why.find("there is no CUDA device"), std::string::npos) << why;
  } else {
    EXPECT_FALSE(why.empty());
  }
}

class GpuSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NUVEC_REQUIRE_GPU();
    nuvec::lm::write_demo_model(dir_.path(), nuvec_test::tiny_model(DType::bf16));
    model_ = std::make_unique<nuvec::lm::Model>(nuvec::lm::load_model(nuvec::Device::cpu(), dir_.path()));
    // A device of its own, so that each test's statistics are its own.
    gpu_ = nuvec::Device::create_cuda(0);
  }

  const nuvec::lm::ModelConfig& config() const { return model_->config(); }

  // The CPU's logits of every prompt row, then of each decode step fed `next`.
  std::vector<std::vector<float>> cpu_logits(std::span<const std::int32_t> prompt,
                                             std::span<const std::int32_t> next) const {
    nuvec::lm::SessionOptions o;
    o.context = 256;
    o.precision = nuvec::lm::Precision::exact;
    o.kv_cache = nuvec::lm::KVCachePrecision::f32;
    nuvec::lm::Session s(nuvec::Device::cpu(), *model_, o);
    std::vector<std::vector<float>> rows;
    s.prefill(prompt, [&](std::size_t, std::span<const float> r) { rows.emplace_back(r.begin(), r.end()); });
    for (std::int32_t t : next) {
      const auto r = s.decode(t);
      rows.emplace_back(r.begin(), r.end());
    }
    return rows;
  }

  nuvec_test::TempDir dir_;
  std::unique_ptr<nuvec::lm::Model> model_;
  std::unique_ptr<nuvec::Device> gpu_;
};

TEST_F(GpuSessionTest, WeightsAreTheDevicesActiveBytes) {
  const gpu::Weights weights(*gpu_, *model_);
  EXPECT_EQ(weights.dtype_name(), "bf16");
  EXPECT_GT(weights.bytes(), 0u);
  const nuvec::MemoryStats s = gpu_->memory();
  EXPECT_EQ(s.active, weights.bytes());
  EXPECT_EQ(s.wired, 0u) << "the upload's staging is given back";
}

TEST_F(GpuSessionTest, LogitsMatchTheCpuSessionWithinTheBound) {
  const gpu::Weights weights(*gpu_, *model_);
  const auto prompt = prompt_tokens(kPrompt, config().vocab_size);
  const auto next = prompt_tokens(kDecode, config().vocab_size + 3);  // other tokens than the prompt's order
  std::vector<std::int32_t> feed(next.begin(), next.end());
  for (auto& t : feed) t %= static_cast<std::int32_t>(config().vocab_size);
  const auto want = cpu_logits(prompt, feed);

  gpu::SessionOptions o;
  o.context = 256;
  o.prefill_chunk = 16;  // three chunks: the cache carried across them
  gpu::Session s(weights, o);
  std::vector<std::vector<float>> got;
  s.prefill(prompt, [&](std::size_t, std::span<const float> r) { got.emplace_back(r.begin(), r.end()); });
  for (std::int32_t t : feed) {
    const auto r = s.decode(t);
    got.emplace_back(r.begin(), r.end());
  }
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    expect_row_close(got[i], want[i], kRowFraction, "row " + std::to_string(i));
    // Greedy agrees wherever the CPU's top two are further apart than the
    // two results can be (twice the bound).
    if (top2_gap(want[i]) > 2 * kRowFraction * row_scale(want[i])) {
      EXPECT_EQ(nuvec::lm::argmax(got[i]), nuvec::lm::argmax(want[i])) << "row " << i;
    }
  }
  EXPECT_EQ(s.position(), kPrompt + kDecode);
}

TEST_F(GpuSessionTest, GreedyOnTheDeviceIsArgmaxOfItsLogits) {
  const gpu::Weights weights(*gpu_, *model_);
  const auto prompt = prompt_tokens(kPrompt, config().vocab_size);
  gpu::Session with_logits(weights, {256, 512});
  gpu::Session greedy(weights, {256, 512});
  std::int32_t a = nuvec::lm::argmax(with_logits.prefill(prompt));
  std::int32_t b = greedy.prefill_greedy(prompt);
  ASSERT_EQ(a, b);
  for (std::size_t i = 0; i < kDecode; ++i) {
    a = nuvec::lm::argmax(with_logits.decode(a));
    b = greedy.decode_greedy(b);
    ASSERT_EQ(a, b) << "step " << i;  // the same kernels on the same inputs: the same logits
  }
}

TEST_F(GpuSessionTest, GreedyTokensMatchTheCpuWhileTheGapAllows) {
  const gpu::Weights weights(*gpu_, *model_);
  const auto prompt = prompt_tokens(kPrompt, config().vocab_size);
  nuvec::lm::SessionOptions co;
  co.context = 256;
  co.precision = nuvec::lm::Precision::exact;
  nuvec::lm::Session cpu(nuvec::Device::cpu(), *model_, co);
  gpu::Session g(weights, {256, 512});
  std::span<const float> logits = cpu.prefill(prompt);
  std::int32_t want = nuvec::lm::argmax(logits);
  std::int32_t got = g.prefill_greedy(prompt);
  std::size_t compared = 0;
  for (std::size_t i = 0; i < kDecode; ++i) {
    // Past a near tie the two may take different paths, legitimately.
    if (top2_gap(logits) <= 2 * kRowFraction * row_scale(logits)) break;
    ASSERT_EQ(got, want) << "step " << i;
    ++compared;
    logits = cpu.decode(want);
    want = nuvec::lm::argmax(logits);
    got = g.decode_greedy(got);
  }
  EXPECT_GT(compared, 0u) << "the first token's gap was already within the bound: the test compared nothing";
}

// Prefill then decode against one prefill of the whole: the same logits up
// to the order of f32 sums (decode's split-KV attention and an m = 1 product
// sum in another order than the prefill tiles), which can move a bf16
// activation by one unit somewhere: 1% of the row's scale.
TEST_F(GpuSessionTest, PrefillThenDecodeEqualsPrefillOfTheWhole) {
  const gpu::Weights weights(*gpu_, *model_);
  const auto tokens = prompt_tokens(kPrompt, config().vocab_size);
  gpu::Session whole(weights, {256, 512});
  const auto a = whole.prefill(tokens);
  const std::vector<float> all(a.begin(), a.end());

  gpu::Session split(weights, {256, 8});  // chunked prefill too
  split.prefill(std::span(tokens).first(kPrompt - 1));
  const auto b = split.decode(tokens.back());
  expect_row_close(std::vector<float>(b.begin(), b.end()), all, 0.01, "prefill + decode vs prefill");
  EXPECT_EQ(split.position(), whole.position());
}

TEST_F(GpuSessionTest, DecodeTakesNoNewSystemMemoryAfterItsFirstStep) {
  const gpu::Weights weights(*gpu_, *model_);
  gpu::Session s(weights, {256, 512});
  std::int32_t t = s.prefill_greedy(prompt_tokens(kPrompt, config().vocab_size));
  s.release_activations();
  t = s.decode_greedy(t);
  const std::uint64_t after_first = gpu_->memory().system_allocations;
  for (std::size_t i = 0; i < kDecode; ++i) t = s.decode_greedy(t);
  EXPECT_EQ(gpu_->memory().system_allocations, after_first);
}

TEST_F(GpuSessionTest, RefusalUnderATightLimitLeavesTheStatisticsAsTheyWere) {
  const gpu::Weights weights(*gpu_, *model_);
  const nuvec::MemoryStats loaded = gpu_->memory();
  // Room for less than the products' workspace alone (32 MiB).
  gpu_->set_memory_limit(loaded.active_with_mapped + (std::size_t{1} << 20));
  const nuvec::MemoryStats before = gpu_->memory();
  try {
    gpu::Session s(weights, {256, 512});
    FAIL() << "the session fit under a limit its workspace passes";
  } catch (const nuvec::OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("memory limit"), std::string::npos) << e.what();
    EXPECT_GT(e.requested(), std::size_t{1} << 20);
  }
  EXPECT_EQ(gpu_->memory(), before);
  // And with the room, it runs.
  gpu_->set_memory_limit(loaded.memory_limit);
  gpu::Session s(weights, {256, 512});
  EXPECT_GE(s.prefill_greedy(prompt_tokens(4, config().vocab_size)), 0);
}

TEST_F(GpuSessionTest, HostileCallsAreRefused) {
  const gpu::Weights weights(*gpu_, *model_);
  EXPECT_THROW(gpu::Session(weights, {config().max_position_embeddings + 1, 512}), nuvec::InvalidArgument);
  EXPECT_THROW(gpu::Session(weights, {16, 0}), nuvec::InvalidArgument);
  gpu::Session s(weights, {16, 512});
  EXPECT_THROW(s.prefill({}), nuvec::InvalidArgument);
  const std::vector<std::int32_t> bad = {1, static_cast<std::int32_t>(config().vocab_size)};
  EXPECT_THROW(s.prefill(bad), nuvec::InvalidArgument);
  EXPECT_THROW(s.decode(-1), nuvec::InvalidArgument);
  EXPECT_THROW(s.prefill(prompt_tokens(17, config().vocab_size)), nuvec::InvalidArgument);
  EXPECT_EQ(s.position(), 0u) << "a refused call runs nothing";
}

// Decode steps replayed as CUDA graphs against the same steps launched one
// kernel at a time: the same launches with the same arguments, so the same
// logits to the bit. Decode attention's split of the keys changes with the
// position (decode_splits: 4 to 10 splits over positions 200 .. 599) inside
// the one graph, as a launch's would; a prefill between steps that reuses
// the activations replays the graph it has.
TEST(GpuSessionGraphs, ReplayedStepsGiveTheLaunchedStepsLogitsToTheBit) {
  NUVEC_REQUIRE_GPU();
  nuvec_test::TempDir dir;
  nuvec::lm::DemoModelOptions spec = nuvec_test::tiny_model(DType::bf16);
  spec.max_position_embeddings = 1024;
  nuvec::lm::write_demo_model(dir.path(), spec);
  const nuvec::lm::Model model = nuvec::lm::load_model(nuvec::Device::cpu(), dir.path());
  const std::unique_ptr<nuvec::Device> device = nuvec::Device::create_cuda(0);
  const gpu::Weights weights(*device, model);
  const std::size_t vocab = model.config().vocab_size;

  gpu::SessionOptions graphed{1024, 512, true};
  gpu::SessionOptions launched{1024, 512, false};
  gpu::Session a(weights, graphed), b(weights, launched);
  const auto prompt = prompt_tokens(200, vocab);
  a.prefill(prompt);
  b.prefill(prompt);
  std::int32_t token = 5;
  const auto steps = [&](std::size_t n, const std::string& when) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto ra = a.decode(token);
      const std::vector<float> la(ra.begin(), ra.end());
      const auto rb = b.decode(token);
      const std::vector<float> lb(rb.begin(), rb.end());
      ASSERT_EQ(la, lb) << when << ", step " << i << " at position " << a.position() - 1;
      token = nuvec::lm::argmax(la);
    }
  };
  steps(400, "positions 200 .. 599");
  gpu::DecodeLaunches da = a.decode_launches();
  EXPECT_TRUE(da.graphs) << da.why_not;
  EXPECT_EQ(da.steps, 400u);
  EXPECT_EQ(da.replays, 399u) << "every step but the first";
  EXPECT_EQ(da.captures, 1u) << "one graph for every position";
  EXPECT_LT(gpu::decode_splits(200, {4, 2, 8, 0}), gpu::decode_splits(599, {4, 2, 8, 0}));
  EXPECT_FALSE(b.decode_launches().graphs);
  EXPECT_EQ(b.decode_launches().replays, 0u);

  // A prompt between steps, in the activations already held: the graph stays.
  const auto more = prompt_tokens(50, vocab + 1);
  std::vector<std::int32_t> feed(more.begin(), more.end());
  for (auto& t : feed) t %= static_cast<std::int32_t>(vocab);
  a.prefill(feed);
  b.prefill(feed);
  steps(20, "after a second prompt");
  EXPECT_EQ(a.decode_launches().captures, 1u);
  // Rewound, replayed steps at the same positions give the same logits again.
  const std::size_t at = a.position();
  const auto r1 = a.decode(3);
  const std::vector<float> l1(r1.begin(), r1.end());
  a.rewind(at);
  const auto r2 = a.decode(3);
  EXPECT_EQ(std::vector<float>(r2.begin(), r2.end()), l1);
  EXPECT_THROW(a.rewind(at + 2), nuvec::InvalidArgument);
  a.rewind(at);
  // The activations given back: the graph named them, so the next step captures anew.
  a.release_activations();
  b.release_activations();
  steps(5, "after release_activations");
  EXPECT_EQ(a.decode_launches().captures, 2u);
  EXPECT_EQ(a.decode_launches().replays, 426u);
}

}  // namespace
