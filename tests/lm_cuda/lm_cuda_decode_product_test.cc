// A decode step's own products (src/lm_cuda/decode_product.h) against the
// CPU's ops::linear on the same rounded inputs, with the bound of
// lm_cuda_ops_test.cc's products: one unit in the last place of the output
// type plus k * 2^-24 * sum |x_i w_i| (an f32 sum of k terms in another
// order). The fused SwiGLU adds what an error in g and u makes of
// silu(g) * u. And the shapes the kernels do not take: refused with false,
// nothing queued, so that the session falls back to cuBLASLt.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu_support.h"
#include "lm/ops.h"
#include "lm_cuda/decode_product.h"
#include "nuvec/error.h"

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

// One product's inputs and the CPU's result, with each output's sum |x_i w_i|.
struct Reference {
  std::vector<float> w, bias, want;
  std::vector<double> magnitude;
};

Reference cpu_product(DType t, const std::vector<float>& x, std::size_t k, std::size_t n, bool bias,
                      std::uint64_t seed) {
  Reference r;
  r.w = random_values(t, n * k, seed, 0.05f);
  r.bias = bias ? random_values(t, n, seed + 1, 0.5f) : std::vector<float>{};
  Tensor w = Tensor::empty(nuvec::Device::cpu(), t, Shape{n, k});
  auto* bits = reinterpret_cast<std::uint16_t*>(w.mutable_data());
  for (std::size_t i = 0; i < r.w.size(); ++i) bits[i] = nuvec_test::gpu::to_bits(t, r.w[i]);
  Tensor b;
  if (bias) {
    b = Tensor::empty(nuvec::Device::cpu(), t, Shape{n});
    auto* bb = reinterpret_cast<std::uint16_t*>(b.mutable_data());
    for (std::size_t i = 0; i < n; ++i) bb[i] = nuvec_test::gpu::to_bits(t, r.bias[i]);
  }
  r.want.resize(n);
  const nuvec::Buffer workspace = nuvec::Device::cpu().new_buffer(ops::linear_workspace_bytes(1, w) + 64);
  ops::linear(x.data(), 1, w, b, r.want.data(), workspace.data(), /*exact=*/true);
  r.magnitude.assign(n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    double s = bias ? std::abs(r.bias[j]) : 0.0;
    for (std::size_t i = 0; i < k; ++i) s += std::abs(double{x[i]} * r.w[j * k + i]);
    r.magnitude[j] = s;
  }
  return r;
}

double sum_bound(const Reference& r, std::size_t k, std::size_t j) {
  return static_cast<double>(k + 1) * 0x1p-24 * r.magnitude[j] + 1e-30;
}

class GpuDecodeProducts : public nuvec_test::gpu::GpuTest {};
INSTANTIATE_TEST_SUITE_P(Types, GpuDecodeProducts, ::testing::Values(DType::bf16, DType::f16),
                         [](const auto& info) { return nuvec_test::gpu::name(info.param); });

struct ProductsCase {
  std::size_t k;
  std::vector<std::size_t> n;  // one launch's products
  bool bias;
  bool f32_out;
};

TEST_P(GpuDecodeProducts, MatchTheCpuProduct) {
  const DType t = dtype();
  for (const ProductsCase& c : std::vector<ProductsCase>{
           {2048, {256, 64, 64}, true, false},  // q, k and v of a layer, with Qwen2's biases
           {5632, {130}, false, false},         // down_proj's k (704 pieces: both loops); rows past 4 warps
           {8, {5}, true, false},               // one piece: most lanes idle
           {512, {1000}, false, true}}) {       // logits, kept f32
    const auto x = random_values(t, c.k, c.k);
    std::vector<Reference> refs;
    std::vector<GpuArray> ws, bs, ys;
    std::vector<gpu::DecodeProduct> products;
    for (std::size_t i = 0; i < c.n.size(); ++i) {
      refs.push_back(cpu_product(t, x, c.k, c.n[i], c.bias, 100 * i + c.k));
      ws.emplace_back(t, refs.back().w);
      bs.emplace_back(t, c.bias ? refs.back().bias : std::vector<float>(1));
      ys.emplace_back(c.n[i] * 4);
    }
    for (std::size_t i = 0; i < c.n.size(); ++i) {
      products.push_back({ws[i].data(), c.bias ? bs[i].data() : nullptr, ys[i].data(), c.n[i]});
    }
    const GpuArray gx(t, x);
    ASSERT_TRUE(gpu::decode_products(gx.data(), c.k, products, t, c.f32_out ? DType::f32 : t, stream_));
    for (std::size_t i = 0; i < c.n.size(); ++i) {
      const Reference& r = refs[i];
      const auto got = c.f32_out ? ys[i].read_f32(c.n[i], stream_) : ys[i].read(t, c.n[i], stream_);
      const double rounding = c.f32_out ? 0.0 : ulp(t);
      expect_within(got, r.want,
                    [&](std::size_t j) { return rounding * std::abs(r.want[j]) + sum_bound(r, c.k, j); },
                    "k " + std::to_string(c.k) + " product " + std::to_string(i) + " of " + std::to_string(c.n[i]));
    }
  }
}

TEST_P(GpuDecodeProducts, SwigluOfGateAndUpMatchesTheCpu) {
  const DType t = dtype();
  const std::size_t k = 2048, n = 300;
  const auto x = random_values(t, k, 5);
  const Reference g = cpu_product(t, x, k, n, /*bias=*/true, 11), u = cpu_product(t, x, k, n, false, 12);
  const GpuArray gx(t, x), gw(t, g.w), gb(t, g.bias), uw(t, u.w), out(n * 2);
  ASSERT_TRUE(gpu::decode_swiglu_product(gx.data(), k, {gw.data(), gb.data(), nullptr, n},
                                         {uw.data(), nullptr, nullptr, n}, out.data(), t, stream_));
  std::vector<float> want(n);
  std::vector<double> bound(n);
  for (std::size_t j = 0; j < n; ++j) {
    // As the unfused path: g and u rounded to t, then silu(g) * u.
    const float gr = nuvec_test::gpu::round_to(t, g.want[j]), ur = nuvec_test::gpu::round_to(t, u.want[j]);
    const double silu = gr / (1.0 + std::exp(-double{gr}));
    want[j] = static_cast<float>(silu * ur);
    // An error e_g in g moves silu(g) by at most 1.1 e_g (silu' is within [-0.1, 1.1]).
    const double eg = ulp(t) * std::abs(gr) + sum_bound(g, k, j), eu = ulp(t) * std::abs(ur) + sum_bound(u, k, j);
    bound[j] = ulp(t) * std::abs(want[j]) + 1.1 * eg * std::abs(ur) + std::abs(silu) * eu + 1e-5;
  }
  expect_within(out.read(t, n, stream_), want, [&](std::size_t j) { return bound[j]; }, "swiglu product");
}

TEST_P(GpuDecodeProducts, ShapesTheKernelsDoNotTakeAreLeftToLinear) {
  const DType t = dtype();
  const GpuArray x(4 * (gpu::kMaxDecodeProductK + 16)), w(4096), y(4096);
  const gpu::DecodeProduct one{w.data(), nullptr, y.data(), 4};
  const std::vector<gpu::DecodeProduct> p{one};
  EXPECT_FALSE(gpu::decode_products(x.data(), 12, p, t, t, stream_)) << "k not a multiple of 8";
  EXPECT_FALSE(gpu::decode_products(x.data(), gpu::kMaxDecodeProductK + 8, p, t, t, stream_)) << "past shared memory";
  EXPECT_FALSE(gpu::decode_products(static_cast<const std::byte*>(x.data()) + 2, 16, p, t, t, stream_))
      << "x not 16-byte aligned";
  const std::vector<gpu::DecodeProduct> with_bias{{w.data(), w.data(), y.data(), 4}};
  EXPECT_FALSE(gpu::decode_products(x.data(), 16, with_bias, t, DType::f32, stream_)) << "an f32 bias";
  EXPECT_FALSE(gpu::decode_swiglu_product(x.data(), 12, one, one, y.data(), t, stream_));
  // What no path takes: InvalidArgument.
  EXPECT_THROW(gpu::decode_products(x.data(), 16, p, DType::f32, DType::f32, stream_), nuvec::InvalidArgument);
  EXPECT_THROW(gpu::decode_products(x.data(), 16, std::vector<gpu::DecodeProduct>(4, one), t, t, stream_),
               nuvec::InvalidArgument);
  EXPECT_THROW(gpu::decode_products(x.data(), 0, p, t, t, stream_), nuvec::InvalidArgument);
  EXPECT_THROW(gpu::decode_swiglu_product(x.data(), 16, one, {w.data(), nullptr, y.data(), 5}, y.data(), t, stream_),
               nuvec::InvalidArgument);
  CUDA_ASSERT(cudaStreamSynchronize(stream_));
}

}  // namespace
