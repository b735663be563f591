// quant_linear_affine() and dequantize_affine_row() against MLX's affine
// quantization written here from its definition (mlx.core.quantize /
// dequantize): value e of a row is bits [b * (e % (32 / b)), ...) of uint32
// word e / (32 / b), and w = scale[e / group] * q + bias[e / group]. Both
// bit widths, every group size, f16 and bf16 scales, on every instruction
// set this CPU has and on the integer path; tolerances as kernel_quant_test's.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/quant_dot.h"
#include "lm/kernels/quant_kernels.h"
#include "lm/kernels/quant_linear.h"
#include "nuvec/error.h"

namespace nuvec::lm::kernels {
namespace {

// A 16-bit float's bytes, as f16 or bf16 (bf16: the top half of the f32).
std::uint16_t to_bits(float v, bool bf16) {
  if (bf16) {
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    return static_cast<std::uint16_t>(b >> 16);  // truncation: the reference reads the same bits back
  }
  const auto h = static_cast<_Float16>(v);
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

double from_bits(std::uint16_t b, bool bf16) {
  if (bf16) {
    const std::uint32_t w = std::uint32_t{b} << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  }
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

struct Weights {
  std::vector<std::uint32_t> packed;
  std::vector<std::uint16_t> scales, biases;
  int bits;
  std::size_t k, group;
  bool bf16;

  double at(std::size_t j, std::size_t e) const {
    const std::size_t per_word = 32 / static_cast<std::size_t>(bits);
    const std::uint32_t word = packed[(j * k + e) / per_word];
    const std::uint32_t q = (word >> (bits * (e % per_word))) & ((1u << bits) - 1);
    const std::size_t g = j * (k / group) + e / group;
    return from_bits(scales[g], bf16) * q + from_bits(biases[g], bf16);
  }
  AffineScales view() const { return {scales.data(), biases.data(), group, bf16}; }
  QuantType type() const { return bits == 4 ? QuantType::affine4 : QuantType::affine8; }
};

Weights random_weights(int bits, std::size_t n, std::size_t k, std::size_t group, bool bf16, std::mt19937& rng) {
  Weights w{{}, {}, {}, bits, k, group, bf16};
  w.packed.resize(n * k * bits / 32);
  for (auto& v : w.packed) v = static_cast<std::uint32_t>(rng());
  std::uniform_real_distribution<float> scale(0.001f, 0.05f), bias(-0.2f, 0.2f);
  for (std::size_t g = 0; g < n * k / group; ++g) {
    w.scales.push_back(to_bits(scale(rng), bf16));
    w.biases.push_back(to_bits(bias(rng), bf16));
  }
  return w;
}

TEST(KernelAffine, DequantizeRowMatchesTheDefinition) {
  std::mt19937 rng(3);
  for (int bits : {4, 8}) {
    for (std::size_t group : {32, 64, 128}) {
      for (bool bf16 : {false, true}) {
        const std::size_t k = 256, n = 3;
        const Weights w = random_weights(bits, n, k, group, bf16, rng);
        std::vector<float> out(k);
        for (std::size_t j = 0; j < n; ++j) {
          dequantize_affine_row(w.type(), w.packed.data(), w.view(), k, j, out.data());
          for (std::size_t e = 0; e < k; ++e) {
            ASSERT_NEAR(out[e], w.at(j, e), 1e-6 * std::abs(w.at(j, e)) + 1e-7)
                << bits << " bits, group " << group << " row " << j << " value " << e;
          }
        }
      }
    }
  }
}

// Every path: each instruction set's f32 products (bound (k + 2) 2^-24 S)
// and, where the CPU has it, the integer path (plus the activation rounding).
TEST(KernelAffine, ProductsMatchTheDefinitionOnEveryPath) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int bits : {4, 8}) {
    for (std::size_t group : {32, 64, 128}) {
      for (bool bf16 : {false, true}) {
        const std::size_t k = 384, n = 19;
        const Weights w = random_weights(bits, n, k, group, bf16, rng);
        for (std::size_t m : {1, 3, 9, 17}) {
          std::vector<float> x(m * k);
          for (auto& v : x) v = normal(rng);
          for (int path = 0; path < 4; ++path) {
            std::vector<float> y(m * n, NAN);
            const bool integer = path == 3;
            if (integer) {
              if (!detail::quant_dot_supported()) continue;
              std::vector<std::uint8_t> workspace(quant_linear_workspace_bytes(m, k));
              quant_linear_affine(x.data(), m, k, w.packed.data(), w.type(), w.view(), n, y.data(), workspace.data());
            } else {
              const Isa isa = path == 0 ? Isa::portable : path == 1 ? Isa::avx2 : Isa::avx512;
              if (!isa_allowed(isa)) continue;
              detail::QuantCall call{x.data(), m, k, w.packed.data(), w.type(), n, y.data()};
              call.affine = w.view();
              detail::quant_linear_with(isa, call);
            }
            for (std::size_t i = 0; i < m; ++i) {
              for (std::size_t j = 0; j < n; ++j) {
                double sum = 0, bound = 0, rounding = 0;
                for (std::size_t p = 0; p < k; ++p) {
                  const double wv = w.at(j, p);
                  sum += x[i * k + p] * wv;
                  bound += std::abs(x[i * k + p] * wv);
                  float amax = 0;
                  for (std::size_t e = p / 32 * 32; e < p / 32 * 32 + 32; ++e) {
                    amax = std::max(amax, std::abs(x[i * k + e]));
                  }
                  rounding += std::abs(wv) * amax / 127.0 / 2.0 * 1.01;
                }
                ASSERT_NEAR(y[i * n + j], sum, (k + 2) * 0x1p-24 * bound + (integer ? rounding : 0.0))
                    << "path " << path << ", " << bits << " bits, group " << group << (bf16 ? " bf16" : " f16")
                    << " m=" << m << " i=" << i << " j=" << j;
              }
            }
          }
        }
      }
    }
  }
}

TEST(KernelAffine, RefusesWhatMlxDoesNotWrite) {
  std::vector<float> x(256), y(4);
  std::vector<std::uint32_t> w(256);
  std::vector<std::uint16_t> s(64);
  EXPECT_THROW(quant_linear_affine(x.data(), 1, 256, w.data(), QuantType::affine4, {s.data(), s.data(), 48, false}, 1,
                                   y.data()),
               InvalidArgument);
  EXPECT_THROW(quant_linear_affine(x.data(), 1, 96, w.data(), QuantType::affine4, {s.data(), s.data(), 32, false}, 1,
                                   y.data()),
               InvalidArgument);  // not a multiple of 64
  EXPECT_THROW(quant_linear(x.data(), 1, 256, w.data(), QuantType::affine4, 1, y.data()), InvalidArgument);
  EXPECT_THROW(quant_linear_affine(x.data(), 1, 256, w.data(), QuantType::affine8, {nullptr, s.data(), 64, false}, 1,
                                   y.data()),
               InvalidArgument);
}

}  // namespace
}  // namespace nuvec::lm::kernels
