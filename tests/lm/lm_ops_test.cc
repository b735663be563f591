// Each op against a straightforward reference loop (in double).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <random>
#include <vector>

#include "lm/kv_cache.h"
#include "lm/ops.h"
#include "lm/rope.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace {

using nuvec::lm::DType;
using nuvec::lm::Shape;
using nuvec::lm::Tensor;
namespace ops = nuvec::lm::ops;

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1, float hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::uint16_t to_bf16(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return static_cast<std::uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

// A weight tensor of `dtype` holding `values` (rounded to the dtype).
Tensor weight(nuvec::Device& device, DType dtype, const Shape& shape, const std::vector<float>& values) {
  Tensor t = Tensor::empty(device, dtype, shape);
  for (std::size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case DType::f32: reinterpret_cast<float*>(t.mutable_data())[i] = values[i]; break;
      case DType::bf16: reinterpret_cast<std::uint16_t*>(t.mutable_data())[i] = to_bf16(values[i]); break;
      case DType::f16: reinterpret_cast<_Float16*>(t.mutable_data())[i] = static_cast<_Float16>(values[i]); break;
    }
  }
  return t;
}

class Ops : public ::testing::TestWithParam<DType> {
 protected:
  std::unique_ptr<nuvec::Device> device_ = nuvec::Device::create_cpu();
};

TEST_P(Ops, WeightAtReadsEachDtype) {
  const Tensor w = weight(*device_, GetParam(), Shape{3}, {1.5f, -0.25f, 3.0f});
  EXPECT_EQ(ops::weight_at(w, 0), 1.5f);
  EXPECT_EQ(ops::weight_at(w, 1), -0.25f);
  EXPECT_EQ(ops::weight_at(w, 2), 3.0f);
}

TEST_P(Ops, EmbeddingCopiesRowsAsF32) {
  const std::size_t vocab = 10, hidden = 6;
  const auto values = random_floats(vocab * hidden, 1);
  const Tensor table = weight(*device_, GetParam(), Shape{vocab, hidden}, values);
  const std::vector<std::int32_t> tokens = {3, 0, 9, 3};
  std::vector<float> out(tokens.size() * hidden);
  ops::embedding(table, tokens, out.data());
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    for (std::size_t i = 0; i < hidden; ++i) {
      EXPECT_EQ(out[r * hidden + i], ops::weight_at(table, static_cast<std::size_t>(tokens[r]) * hidden + i));
    }
  }
  const std::vector<std::int32_t> bad = {1, 10};
  EXPECT_THROW(ops::embedding(table, bad, out.data()), nuvec::InvalidArgument);
  const std::vector<std::int32_t> negative = {-1};
  EXPECT_THROW(ops::embedding(table, negative, out.data()), nuvec::InvalidArgument);
}

TEST_P(Ops, RmsNormMatchesTheFormula) {
  const std::size_t rows = 37, dim = 48;  // more rows than one parallel block
  const auto x = random_floats(rows * dim, 2, -3, 3);
  const Tensor w = weight(*device_, GetParam(), Shape{dim}, random_floats(dim, 3, 0.5, 1.5));
  std::vector<float> out(rows * dim);
  ops::rms_norm(x.data(), rows, dim, w, 1e-5, out.data());
  for (std::size_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (std::size_t i = 0; i < dim; ++i) ms += double{x[r * dim + i]} * x[r * dim + i];
    const double inv = 1 / std::sqrt(ms / dim + 1e-5);
    for (std::size_t i = 0; i < dim; ++i) {
      EXPECT_NEAR(out[r * dim + i], ops::weight_at(w, i) * x[r * dim + i] * inv, 1e-5);
    }
  }
  std::vector<float> in_place = x;
  ops::rms_norm(in_place.data(), rows, dim, w, 1e-5, in_place.data());
  EXPECT_EQ(in_place, out);
}

TEST_P(Ops, LinearWithBias) {
  const std::size_t m = 5, k = 24, n = 7;
  const auto x = random_floats(m * k, 4);
  const Tensor w = weight(*device_, GetParam(), Shape{n, k}, random_floats(n * k, 5));
  const Tensor b = weight(*device_, GetParam(), Shape{n}, random_floats(n, 6));
  std::vector<float> y(m * n);
  const Tensor scratch = Tensor::empty(*device_, DType::f32, Shape{ops::linear_workspace_bytes(m, w) / 4 + 1});
  ops::linear(x.data(), m, w, b, y.data(), scratch.mutable_data(), /*exact=*/true);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double s = ops::weight_at(b, j);
      for (std::size_t p = 0; p < k; ++p) s += double{x[i * k + p]} * ops::weight_at(w, j * k + p);
      EXPECT_NEAR(y[i * n + j], s, 1e-5);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Ops, ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(nuvec::lm::dtype_name(info.param)); });

TEST(Ops, SwigluAndAdd) {
  auto gate = random_floats(100, 7, -8, 8);
  const auto up = random_floats(100, 8);
  const auto gate0 = gate;
  ops::swiglu(gate.data(), up.data(), gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i) {
    const double g = gate0[i];
    EXPECT_NEAR(gate[i], g / (1 + std::exp(-g)) * up[i], 1e-6);
  }
  std::vector<float> x = up;
  ops::add(x.data(), gate0.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], up[i] + gate0[i]);
}

TEST(Rope, InverseFrequenciesPlainAndLlama3) {
  nuvec::lm::ModelConfig c;
  c.head_dim = 128;
  c.rope_theta = 500000;
  std::vector<float> plain(64), scaled(64);
  nuvec::lm::rope::inverse_frequencies(c, plain.data());
  for (std::size_t i = 0; i < 64; ++i) EXPECT_NEAR(plain[i], std::pow(500000.0, -2.0 * i / 128), 1e-6 * plain[i]);

  c.rope_scaling = nuvec::lm::Llama3RopeScaling{8.0, 1.0, 4.0, 8192};
  nuvec::lm::rope::inverse_frequencies(c, scaled.data());
  int kept = 0, divided = 0, blended = 0;
  for (std::size_t i = 0; i < 64; ++i) {
    const double f = plain[i], wavelen = 2 * std::numbers::pi / f;
    double expect = f;
    if (wavelen > 8192) {
      expect = f / 8, ++divided;
    } else if (wavelen >= 2048) {
      const double smooth = (8192 / wavelen - 1) / 3;
      expect = (1 - smooth) * f / 8 + smooth * f, ++blended;
    } else {
      ++kept;
    }
    EXPECT_NEAR(scaled[i], expect, 1e-5 * expect) << i;
  }
  EXPECT_GT(kept, 0);  // the case exercises all three bands
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
}

TEST(Rope, RotatesHalvesAsTransformers) {
  const std::size_t rows = 3, heads = 2, hd = 8, half = 4, first = 5;
  nuvec::lm::ModelConfig c;
  c.head_dim = hd;
  c.rope_theta = 10000;
  std::vector<float> inv(half), cos(rows * half), sin(rows * half);
  nuvec::lm::rope::inverse_frequencies(c, inv.data());
  nuvec::lm::rope::angles(inv.data(), half, first, rows, cos.data(), sin.data());
  const std::size_t stride = heads * hd + 3;  // rows wider than the heads: the stride is honoured
  auto x = random_floats(rows * stride, 9);
  const auto x0 = x;
  nuvec::lm::rope::apply(x.data(), rows, stride, heads, hd, cos.data(), sin.data());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t i = 0; i < hd; ++i) {
        const std::size_t j = i % half;
        const double angle = double(first + r) * inv[j];
        const double xi = x0[r * stride + h * hd + i];
        const double rotated = i < half ? -x0[r * stride + h * hd + i + half] : x0[r * stride + h * hd + i - half];
        EXPECT_NEAR(x[r * stride + h * hd + i], xi * std::cos(angle) + rotated * std::sin(angle), 1e-5);
      }
    }
    for (std::size_t i = heads * hd; i < stride; ++i) EXPECT_EQ(x[r * stride + i], x0[r * stride + i]);
  }
}

TEST(KVCache, StoresKeysTransposedAndValuesByPosition) {
  auto device = nuvec::Device::create_cpu();
  nuvec::lm::ModelConfig c;
  c.num_hidden_layers = 2;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  const nuvec::lm::KVCache cache(*device, c, 10, /*tile=*/8);
  EXPECT_EQ(cache.key_stride(), 16u);  // key rows padded to whole tiles
  EXPECT_EQ(cache.bytes(), 2u * 2 * 4 * 16 * 4 + 2u * 2 * 4 * 10 * 4);
  EXPECT_EQ(device->memory().active, nuvec::allocation_size(2 * 2 * 4 * 16 * 4).value() +
                                         nuvec::allocation_size(2 * 2 * 4 * 10 * 4).value());
  EXPECT_EQ(cache.bytes_per_position(), 2u * 2 * 2 * 4 * 4);
  const auto k = random_floats(3 * 8, 10), v = random_floats(3 * 8, 11);
  cache.store(1, 4, 3, k.data(), v.data());
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t h = 0; h < 2; ++h) {
      for (std::size_t d = 0; d < 4; ++d) {
        EXPECT_EQ(cache.keys(1, h)[d * 16 + 4 + r], k[r * 8 + h * 4 + d]);
        EXPECT_EQ(cache.values(1, h)[(4 + r) * 4 + d], v[r * 8 + h * 4 + d]);
      }
    }
  }
  EXPECT_THROW(nuvec::lm::KVCache(*device, c, 0), nuvec::InvalidArgument);
}

}  // namespace
