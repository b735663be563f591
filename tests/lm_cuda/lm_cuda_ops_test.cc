// The GPU path's element-wise and row-wise kernels and its products, each
// against the CPU path's own function (src/lm/ops.h, rope.h) on the same
// inputs: random values rounded to f16 or bf16 first, so that both start
// from the same numbers and the CPU's f32 result is the reference.
//
// The bound, for every element: one unit in the last place of the GPU's
// element type, relative to the reference (the GPU rounds its f32 result
// once; a full unit rather than half lets the two f32 computations round to
// neighbours), plus what f32 arithmetic itself may differ by: 1e-5 for the
// element-wise ops (sincosf and expf are within 2 ulp of f32, some 2.4e-7
// of a value, times inputs of up to about 5, where a rotation's two terms
// may cancel to near 0), and for the
// products k * 2^-24 * sum |x_i w_i|, the textbook bound on an f32 sum of k
// terms in any order (cuBLASLt's order is not the CPU's).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu_support.h"
#include "lm/ops.h"
#include "lm/rope.h"
#include "lm_cuda/kv_layout.h"
#include "lm_cuda/linear.h"
#include "lm_cuda/ops.h"
#include "nuvec/error.h"
#include "nuvec/lm/config.h"

namespace {

namespace gpu = nuvec::lm::gpu;
namespace ops = nuvec::lm::ops;
using nuvec::lm::DType;
using nuvec::lm::Shape;
using nuvec::lm::Tensor;
using nuvec_test::gpu::expect_within;
using nuvec_test::gpu::GpuArray;
using nuvec_test::gpu::random_values;
using nuvec_test::gpu::ulp;

constexpr double kElementwiseSlack = 1e-5;

// A CPU tensor of `t` holding `values` (already rounded to t).
Tensor cpu_tensor(DType t, const std::vector<float>& values, const Shape& shape) {
  Tensor w = Tensor::empty(nuvec::Device::cpu(), t, shape);
  auto* bits = reinterpret_cast<std::uint16_t*>(w.mutable_data());
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = nuvec_test::gpu::to_bits(t, values[i]);
  return w;
}

class GpuOps : public nuvec_test::gpu::GpuTest {};
INSTANTIATE_TEST_SUITE_P(Types, GpuOps, ::testing::Values(DType::bf16, DType::f16),
                         [](const auto& info) { return nuvec_test::gpu::name(info.param); });

TEST_P(GpuOps, RmsNormMatchesTheCpu) {
  const DType t = dtype();
  // The 1.1B and 7B hidden sizes, one row and an odd number of them, and a
  // dim that is no multiple of the block.
  for (const auto& [rows, dim] : std::vector<std::pair<std::size_t, std::size_t>>{
           {1, 2048}, {7, 2048}, {33, 4096}, {5, 1000}, {3, 37}}) {
    const auto x = random_values(t, rows * dim, rows * 31 + dim, 2.0f);
    const auto weight = random_values(t, dim, dim, 0.5f);
    std::vector<float> want(rows * dim);
    ops::rms_norm(x.data(), rows, dim, cpu_tensor(t, weight, Shape{dim}), 1e-5, want.data());

    const GpuArray gx(t, x), gw(t, weight), out(rows * dim * 2);
    gpu::rms_norm(gx.data(), rows, dim, gw.data(), 1e-5, out.data(), t, stream_);
    const auto got = out.read(t, rows * dim, stream_);
    expect_within(got, want, [&](std::size_t i) { return ulp(t) * std::abs(want[i]) + kElementwiseSlack; },
                  "rms_norm " + std::to_string(rows) + " x " + std::to_string(dim));
    // In place, as the CPU allows.
    gpu::rms_norm(gx.data(), rows, dim, gw.data(), 1e-5, gx.data(), t, stream_);
    EXPECT_EQ(gx.read(t, rows * dim, stream_), got) << "in place";
  }
}

TEST_P(GpuOps, SwigluMatchesTheCpu) {
  const DType t = dtype();
  for (const std::size_t count : {std::size_t{1}, std::size_t{5631}, std::size_t{33 * 5632},
                                  std::size_t{4096 * 300 + 17}}) {  // the last past the grid: threads loop
    const auto gate = random_values(t, count, count, 3.0f), up = random_values(t, count, count + 1);
    std::vector<float> want = gate;
    ops::swiglu(want.data(), up.data(), count);

    const GpuArray gg(t, gate), gu(t, up);
    gpu::swiglu(gg.data(), gu.data(), gg.data(), count, t, stream_);  // in place, as the CPU
    expect_within(gg.read(t, count, stream_), want,
                  [&](std::size_t i) { return ulp(t) * std::abs(want[i]) + kElementwiseSlack; },
                  "swiglu of " + std::to_string(count));
  }
}

struct RopeCase {
  std::size_t rows, heads, head_dim, first;
  bool llama3;
  gpu::RopeLayout layout;
};

TEST_P(GpuOps, RopeMatchesTheCpuInBothLayouts) {
  const DType t = dtype();
  using gpu::RopeLayout;
  for (const RopeCase c : std::vector<RopeCase>{
           {1, 32, 64, 0, false, RopeLayout::half_split},        // decode at 0: the identity
           {1, 4, 64, 4095, false, RopeLayout::half_split},      // decode deep in the context
           {37, 32, 64, 70, false, RopeLayout::half_split},      // the 1.1B queries, a chunk after another
           {37, 4, 64, 70, false, RopeLayout::interleaved},      // its keys, GGUF's order
           {20, 8, 128, 8000, true, RopeLayout::half_split},     // Llama 3's scaled frequencies
           {9, 3, 24, 5, false, RopeLayout::interleaved}}) {
    nuvec::lm::ModelConfig config;
    config.head_dim = c.head_dim;
    config.rope_theta = c.llama3 ? 500000.0 : 10000.0;
    if (c.llama3) config.rope_scaling = nuvec::lm::Llama3RopeScaling{};
    const std::size_t half = c.head_dim / 2;
    std::vector<float> inv(half), cos(c.rows * half), sin(c.rows * half);
    nuvec::lm::rope::inverse_frequencies(config, inv.data());
    nuvec::lm::rope::angles(inv.data(), half, c.first, c.rows, cos.data(), sin.data());
    // A row wider than its heads (the row stride of a fused projection).
    const std::size_t stride = c.heads * c.head_dim + 16;
    const auto x = random_values(t, c.rows * stride, c.rows + c.first);
    std::vector<float> want = x;
    const auto rotate =
        c.layout == RopeLayout::interleaved ? nuvec::lm::rope::apply_interleaved : nuvec::lm::rope::apply;
    rotate(want.data(), c.rows, stride, c.heads, c.head_dim, cos.data(), sin.data());

    const GpuArray gx(t, x), ginv(inv);
    gpu::rope(gx.data(), c.rows, stride, c.heads, c.head_dim, ginv.f32(), c.first, c.layout, t, stream_);
    // Positions are rounded to f32 as the CPU rounds them, and an angle of
    // 8000 radians loses nothing more on either side.
    expect_within(gx.read(t, c.rows * stride, stream_), want,
                  [&](std::size_t i) { return ulp(t) * std::abs(want[i]) + kElementwiseSlack; },
                  "rope rows " + std::to_string(c.rows) + " heads " + std::to_string(c.heads) + " head_dim " +
                      std::to_string(c.head_dim) + " first " + std::to_string(c.first));
  }
}

struct LinearCase {
  std::size_t m, k, n;
  bool bias;
  bool f32_out;
};

TEST_P(GpuOps, LinearMatchesTheCpuProduct) {
  const DType t = dtype();
  gpu::Linear linear(gpu(), stream_);
  // Odd row counts; k and n stay multiples of 8 as every checkpoint's do
  // (16-byte rows, which cuBLASLt's kernels are built for).
  for (const LinearCase c : std::vector<LinearCase>{
           {1, 2048, 256, false, false},    // a decode step's q_proj, cut to 256 outputs
           {7, 2048, 512, true, false},     // a short chunk, with Qwen2's bias
           {33, 256, 5632 / 8, false, false},
           {130, 64, 104, true, false},     // odd rows; outputs no multiple of 16
           {5, 512, 1000, false, true}}) {  // logits, kept f32
    const auto x = random_values(t, c.m * c.k, c.m * 7 + c.k);
    const auto w = random_values(t, c.n * c.k, c.n * 13 + c.k, 0.05f);
    const auto bias = random_values(t, c.n, c.n, 0.5f);
    const Tensor cpu_w = cpu_tensor(t, w, Shape{c.n, c.k});
    const Tensor cpu_bias = c.bias ? cpu_tensor(t, bias, Shape{c.n}) : Tensor{};
    std::vector<float> want(c.m * c.n);
    // The CPU kernels' workspace, aligned as the session's (a device buffer).
    const nuvec::Buffer workspace = nuvec::Device::cpu().new_buffer(ops::linear_workspace_bytes(c.m, cpu_w) + 64);
    ops::linear(x.data(), c.m, cpu_w, cpu_bias, want.data(), workspace.data(), /*exact=*/true);
    std::vector<double> magnitude(c.m * c.n, 0);  // sum |x_i w_i| of each output
    for (std::size_t r = 0; r < c.m; ++r) {
      for (std::size_t j = 0; j < c.n; ++j) {
        double s = c.bias ? std::abs(bias[j]) : 0.0;
        for (std::size_t i = 0; i < c.k; ++i) s += std::abs(double{x[r * c.k + i]} * w[j * c.k + i]);
        magnitude[r * c.n + j] = s;
      }
    }

    const GpuArray gx(t, x), gw(t, w), gb(t, bias), out(c.m * c.n * 4);
    const DType y_dtype = c.f32_out ? DType::f32 : t;
    linear(gx.data(), c.m, c.k, gw.data(), c.n, t, c.bias ? gb.data() : nullptr, out.data(), y_dtype, stream_);
    const auto got = c.f32_out ? out.read_f32(c.m * c.n, stream_) : out.read(t, c.m * c.n, stream_);
    const double rounding = c.f32_out ? 0.0 : ulp(t);
    expect_within(got, want,
                  [&](std::size_t i) {
                    return rounding * std::abs(want[i]) + static_cast<double>(c.k + 1) * 0x1p-24 * magnitude[i] + 1e-30;
                  },
                  "linear m " + std::to_string(c.m) + " k " + std::to_string(c.k) + " n " + std::to_string(c.n));
  }
  // Each shape planned once: running the first again adds no plan.
  const std::size_t plans = linear.plans();
  const auto x = random_values(t, 2048, 1);
  const GpuArray gx(t, x), gw(t, random_values(t, 256 * 2048, 2)), out(256 * 2);
  linear(gx.data(), 1, 2048, gw.data(), 256, t, nullptr, out.data(), t, stream_);
  EXPECT_EQ(linear.plans(), plans);
  CUDA_ASSERT(cudaStreamSynchronize(stream_));  // before its buffers go back to the device
}

TEST_P(GpuOps, KvStorePutsEachHeadsRowInPlace) {
  const DType t = dtype();
  const std::size_t kv_heads = 4, head_dim = 64, capacity = 50, first = 11, rows = 13;
  const GpuArray keys(kv_heads * capacity * head_dim * 2), values(kv_heads * capacity * head_dim * 2);
  CUDA_ASSERT(cudaMemsetAsync(keys.data(), 0, kv_heads * capacity * head_dim * 2, stream_));
  CUDA_ASSERT(cudaMemsetAsync(values.data(), 0, kv_heads * capacity * head_dim * 2, stream_));
  const auto k = random_values(t, rows * kv_heads * head_dim, 1), v = random_values(t, rows * kv_heads * head_dim, 2);
  const GpuArray gk(t, k), gv(t, v);
  const gpu::KVLayer layer{keys.data(), values.data(), capacity, kv_heads, head_dim, t};
  gpu::kv_store(layer, first, rows, gk.data(), gv.data(), stream_);
  const auto got_k = keys.read(t, kv_heads * capacity * head_dim, stream_);
  const auto got_v = values.read(t, kv_heads * capacity * head_dim, stream_);
  for (std::size_t h = 0; h < kv_heads; ++h) {
    for (std::size_t p = 0; p < capacity; ++p) {
      for (std::size_t d = 0; d < head_dim; ++d) {
        const std::size_t at = (h * capacity + p) * head_dim + d;
        const bool stored = p >= first && p < first + rows;
        const std::size_t from = ((p - first) * kv_heads + h) * head_dim + d;
        ASSERT_EQ(got_k[at], stored ? k[from] : 0.0f) << "key head " << h << " position " << p << " dim " << d;
        ASSERT_EQ(got_v[at], stored ? v[from] : 0.0f) << "value head " << h << " position " << p << " dim " << d;
      }
    }
  }
  EXPECT_THROW(gpu::kv_store(layer, capacity - 2, 3, gk.data(), gv.data(), stream_), nuvec::InvalidArgument);
}

// Refusals come before any launch, so they hold without a GPU too.
TEST(GpuOpsArguments, OtherDtypesAndOddHeadDimsAreRefused) {
  EXPECT_THROW(gpu::rms_norm(nullptr, 1, 8, nullptr, 1e-5, nullptr, DType::f32, nullptr), nuvec::InvalidArgument);
  EXPECT_THROW(gpu::swiglu(nullptr, nullptr, nullptr, 8, DType::q8_0, nullptr), nuvec::InvalidArgument);
  EXPECT_THROW(gpu::rope(nullptr, 1, 8, 1, 7, nullptr, 0, gpu::RopeLayout::half_split, DType::bf16, nullptr),
               nuvec::InvalidArgument);
  EXPECT_THROW(gpu::rope(nullptr, 1, 8, 2, 8, nullptr, 0, gpu::RopeLayout::half_split, DType::bf16, nullptr),
               nuvec::InvalidArgument);  // two heads of 8 do not fit a row of 8
  const gpu::KVLayer layer{nullptr, nullptr, 4, 1, 8, DType::f32};
  EXPECT_THROW(gpu::kv_store(layer, 0, 1, nullptr, nullptr, nullptr), nuvec::InvalidArgument);
}

}  // namespace
