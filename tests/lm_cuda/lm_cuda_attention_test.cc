// The GPU's decode and prefill attention against the CPU path's own
// attention::attend (Precision::exact: f32 throughout), on the same keys,
// values and queries (random, rounded to f16 or bf16 first), the GPU's cache
// filled by kv_store from the same rows the CPU's KVCache stores.
//
// The bound: one unit in the last place of the element type relative to the
// reference (the GPU rounds its f32 result once), plus 1e-4 for where the
// two f32 computations part: the sums of up to a few thousand weighted
// values (|v| < 5) in other orders, and expf against the CPU's exp, each
// within a few f32 ulp (the CPU's own test holds its tiles to 2e-5 of a
// double-precision softmax).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu_support.h"
#include "lm/attention.h"
#include "lm/kv_cache.h"
#include "lm_cuda/attention.h"
#include "nuvec/error.h"
#include "nuvec/lm/config.h"
#include "nuvec/lm/kernels.h"

namespace {

namespace gpu = nuvec::lm::gpu;
namespace attention = nuvec::lm::attention;
using nuvec::lm::DType;
using nuvec_test::gpu::expect_within;
using nuvec_test::gpu::GpuArray;
using nuvec_test::gpu::random_values;
using nuvec_test::gpu::ulp;

constexpr double kSlack = 1e-4;

struct Case {
  std::size_t heads, kv_heads, head_dim, first, rows, window;
};

std::string describe(const Case& c) {
  return "heads " + std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + " head_dim " +
         std::to_string(c.head_dim) + " first " + std::to_string(c.first) + " rows " + std::to_string(c.rows) +
         " window " + std::to_string(c.window);
}

class GpuAttention : public nuvec_test::gpu::GpuTest {
 protected:
  // Runs rows c.rows at c.first through the CPU's attend and the GPU's
  // kernel (decode for one row unless `prefill`), and compares them.
  void check(const Case& c, bool prefill) {
    const DType t = dtype();
    // Room to spare; for decode, enough that a grid sized for the whole
    // cache (a graphed step's, below) has blocks past the step's splits.
    const std::size_t positions = c.first + c.rows, capacity = positions + (prefill ? 3 : 4096);
    const std::size_t kv_width = c.kv_heads * c.head_dim, q_width = c.heads * c.head_dim;
    const auto keys = random_values(t, positions * kv_width, positions + 1);
    const auto values = random_values(t, positions * kv_width, positions + 2);
    const auto q = random_values(t, c.rows * q_width, positions + 3);

    nuvec::lm::ModelConfig config;
    config.num_hidden_layers = 1;
    config.num_attention_heads = c.heads;
    config.num_key_value_heads = c.kv_heads;
    config.head_dim = c.head_dim;
    auto cpu = nuvec::Device::create_cpu();
    const nuvec::lm::KVCache cache(*cpu, config, capacity, attention::kKeys);
    cache.store(0, 0, positions, keys.data(), values.data());
    const attention::Shape shape{c.heads, c.kv_heads, c.head_dim, c.window};
    std::vector<float> scratch(attention::scratch_floats(shape) * static_cast<std::size_t>(nuvec::lm::kernels::threads()));
    std::vector<float> want(c.rows * q_width);
    attention::attend(q.data(), c.rows, c.first, cache, 0, shape, want.data(), scratch.data(),
                      nuvec::lm::kernels::Precision::exact);

    const std::size_t cache_bytes = c.kv_heads * capacity * c.head_dim * 2;
    const GpuArray gkeys(cache_bytes), gvalues(cache_bytes);
    const gpu::KVLayer layer{gkeys.data(), gvalues.data(), capacity, c.kv_heads, c.head_dim, t};
    {
      const GpuArray k(t, keys), v(t, values);
      gpu::kv_store(layer, 0, positions, k.data(), v.data(), stream_);
      CUDA_ASSERT(cudaStreamSynchronize(stream_));  // before k and v go back to the cache
    }
    const GpuArray gq(t, q), out(c.rows * q_width * 2);
    const gpu::AttentionShape gshape{c.heads, c.kv_heads, c.head_dim, c.window};
    if (prefill) {
      gpu::prefill_attention(gq.data(), c.rows, c.first, layer, gshape, out.data(), stream_);
    } else {
      ASSERT_EQ(c.rows, 1u);
      const gpu::DecodeScratch decode_scratch(gpu(), gshape, stream_);
      gpu::decode_attention(gq.data(), c.first, layer, gshape, out.data(), decode_scratch, stream_);
      // A second step over the same scratch: its counters were left at zero.
      const GpuArray again(q_width * 2);
      gpu::decode_attention(gq.data(), c.first, layer, gshape, again.data(), decode_scratch, stream_);
      EXPECT_EQ(again.read(t, q_width, stream_), out.read(t, q_width, stream_)) << "second step, " << describe(c);
      // The position read from device memory, as a CUDA graph's replay
      // does: the grid is the whole cache's, the split the step's own, so
      // the same result to the bit.
      const std::vector<std::int32_t> at_host{static_cast<std::int32_t>(c.first)};
      const GpuArray at(sizeof(std::int32_t)), graphed(q_width * 2);
      CUDA_ASSERT(cudaMemcpyAsync(at.data(), at_host.data(), sizeof(std::int32_t), cudaMemcpyHostToDevice, stream_));
      gpu::decode_attention(gq.data(), c.first, layer, gshape, graphed.data(), decode_scratch, stream_,
                            static_cast<const std::int32_t*>(at.data()));
      EXPECT_EQ(graphed.read(t, q_width, stream_), out.read(t, q_width, stream_)) << "position read on the GPU, " << describe(c);
    }
    expect_within(out.read(t, c.rows * q_width, stream_), want,
                  [&](std::size_t i) { return ulp(t) * std::abs(want[i]) + kSlack; },
                  (prefill ? "prefill " : "decode ") + describe(c));
  }
};
INSTANTIATE_TEST_SUITE_P(Types, GpuAttention, ::testing::Values(DType::bf16, DType::f16),
                         [](const auto& info) { return nuvec_test::gpu::name(info.param); });

// Decode: the first position, a few keys, one split and many (the scratch's
// last-block combine), the 1.1B shape (GQA 32/4, head_dim 64) and the 7B
// one (32/8, 128), odd lengths, sliding windows, the largest group and head.
TEST_P(GpuAttention, DecodeAtTheFirstPosition) { check({32, 4, 64, 0, 1, 0}, false); }
TEST_P(GpuAttention, DecodeOverAFewKeys) { check({32, 4, 64, 6, 1, 0}, false); }
TEST_P(GpuAttention, DecodeOfTheSmallShapeAtAnOddLength) { check({32, 4, 64, 1000, 1, 0}, false); }
TEST_P(GpuAttention, DecodeSplitAcrossManyBlocks) { check({32, 4, 64, 5000, 1, 0}, false); }
TEST_P(GpuAttention, DecodeOfTheSevenBShape) { check({32, 8, 128, 2047, 1, 0}, false); }
TEST_P(GpuAttention, DecodeWithoutGrouping) { check({4, 4, 64, 300, 1, 0}, false); }
TEST_P(GpuAttention, DecodeWithSixteenQueriesPerKeyHeadOf256) { check({32, 2, 256, 777, 1, 0}, false); }
TEST_P(GpuAttention, DecodeInASlidingWindow) { check({8, 2, 64, 3000, 1, 700}, false); }
TEST_P(GpuAttention, DecodeInAWindowOfOne) { check({8, 2, 64, 40, 1, 1}, false); }
TEST_P(GpuAttention, DecodeWithAHeadDimOf24) { check({6, 3, 24, 129, 1, 0}, false); }

// Prefill: one row, a prompt across several query and key tiles, a chunk
// after earlier chunks, odd lengths, windows within and across tiles, and
// head_dim 256 (more shared memory than a launch gets unasked).
TEST_P(GpuAttention, PrefillOfOneRow) { check({32, 4, 64, 0, 1, 0}, true); }
TEST_P(GpuAttention, PrefillOfTheSmallShape) { check({32, 4, 64, 0, 150, 0}, true); }
TEST_P(GpuAttention, PrefillChunkAfterEarlierChunks) { check({32, 4, 64, 70, 37, 0}, true); }
TEST_P(GpuAttention, PrefillOfTheSevenBShape) { check({32, 8, 128, 5, 97, 0}, true); }
TEST_P(GpuAttention, PrefillWithoutGrouping) { check({3, 3, 64, 5, 20, 0}, true); }
TEST_P(GpuAttention, PrefillInAWindowWithinATile) { check({4, 2, 64, 0, 30, 8}, true); }
TEST_P(GpuAttention, PrefillInAWindowAcrossTiles) { check({4, 2, 64, 90, 60, 70}, true); }
TEST_P(GpuAttention, PrefillWithAHeadDimOf256) { check({16, 1, 256, 33, 40, 0}, true); }
TEST_P(GpuAttention, PrefillWithAHeadDimOf24) { check({6, 3, 24, 30, 20, 0}, true); }

// Refusals come before any launch, so they hold without a GPU too.
TEST(GpuAttentionArguments, ShapesPastTheKernelsAreRefused) {
  const gpu::KVLayer cache{nullptr, nullptr, 16, 2, 64, DType::bf16};
  const auto refused = [&](const gpu::AttentionShape& shape, const gpu::KVLayer& layer, std::size_t first) {
    EXPECT_THROW(gpu::prefill_attention(nullptr, 1, first, layer, shape, nullptr, nullptr), nuvec::InvalidArgument);
  };
  refused({4, 2, 64, 0}, {nullptr, nullptr, 16, 2, 64, DType::f32}, 0);  // not a half type
  refused({5, 2, 64, 0}, cache, 0);                                      // heads do not share evenly
  refused({4, 2, 60, 0}, {nullptr, nullptr, 16, 2, 60, DType::bf16}, 0);  // head_dim no multiple of 8
  refused({4, 2, 512, 0}, {nullptr, nullptr, 16, 2, 512, DType::bf16}, 0);  // past 256
  refused({64, 2, 64, 0}, cache, 0);                                     // 32 queries per key head
  refused({4, 2, 128, 0}, cache, 0);                                     // not the cache's head_dim
  refused({4, 2, 64, 0}, cache, 16);                                     // past the cache
}

}  // namespace
