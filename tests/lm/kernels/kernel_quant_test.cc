// quant_linear() and dequantize_row() against an independent dequantization
// written here from the block layouts (ggml-common.h's block_q4_0 ..
// block_q6_K and ggml's reference dequantize_row_* loops): weight e of a
// block computed from its index alone, without the kernels' unpack-by-runs.
// Every type, on every instruction set this CPU has, with x-row counts that
// take each tile size (8, 4, 2, 1 rows) and weight rows of several blocks.
//
// Tolerance, per output: (k + 2) * 2^-24 * S with S = sum_p |x_p * w_p|
// (in double), the classical bound for an f32 sum of k products in any order
// (each weight is dequantized exactly as the reference does, up to one
// rounding of scale * q + offset, which is inside it too).
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

float half(const std::uint8_t* p) {
  _Float16 h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(h);
}

int nibble(std::uint8_t byte, bool high) { return high ? byte >> 4 : byte & 0x0F; }

// Q3_K's sixteen 6-bit scales from 12 bytes, the way ggml reads them: three
// little-endian words, rearranged with the masks 0x03030303 and 0x0f0f0f0f.
void q3k_scales(const std::uint8_t* packed, int out[16]) {
  std::uint32_t aux[4];
  std::memcpy(aux, packed, 12);
  const std::uint32_t kmask1 = 0x03030303u, kmask2 = 0x0f0f0f0fu, tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  std::int8_t s[16];
  std::memcpy(s, aux, 16);
  for (int i = 0; i < 16; ++i) out[i] = s[i] - 32;
}

// Q4_K/Q5_K: scale and min of sub-block j (0..7) of 32.
void k4_scale_min(const std::uint8_t* s, int j, int& sc, int& mn) {
  if (j < 4) {
    sc = s[j] & 63;
    mn = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    mn = (s[j + 4] >> 4) | ((s[j - 0] >> 6) << 4);
  }
}

// Weight e of one block of `type`.
double reference_weight(QuantType type, const std::uint8_t* b, int e) {
  switch (type) {
    case QuantType::q8_0: return double{half(b)} * static_cast<std::int8_t>(b[2 + e]);
    case QuantType::q4_0: return double{half(b)} * (nibble(b[2 + e % 16], e >= 16) - 8);
    case QuantType::q4_1: return double{half(b)} * nibble(b[4 + e % 16], e >= 16) + half(b + 2);
    case QuantType::q5_0:
    case QuantType::q5_1: {
      const bool with_min = type == QuantType::q5_1;
      const std::uint8_t* qh = b + (with_min ? 4 : 2);
      const std::uint8_t* qs = qh + 4;
      const int high_bit = (qh[e / 8] >> (e % 8)) & 1;
      const int q = nibble(qs[e % 16], e >= 16) + 16 * high_bit;
      return with_min ? double{half(b)} * q + half(b + 2) : double{half(b)} * (q - 16);
    }
    case QuantType::q2_k: {
      const int half_i = e / 128, within = e % 128, shift = within / 32, l = within % 32;
      const int q = (b[16 + half_i * 32 + l] >> (2 * shift)) & 3;
      const std::uint8_t sc = b[e / 16];
      return double{half(b + 80)} * (sc & 15) * q - double{half(b + 82)} * (sc >> 4);
    }
    case QuantType::q3_k: {
      const int half_i = e / 128, within = e % 128, shift = within / 32, l = within % 32;
      int scales[16];
      q3k_scales(b + 96, scales);
      const int low = (b[32 + half_i * 32 + l] >> (2 * shift)) & 3;
      const bool high = (b[l] >> (half_i * 4 + shift)) & 1;
      return double{half(b + 108)} * scales[e / 16] * (low - (high ? 0 : 4));
    }
    case QuantType::q4_k:
    case QuantType::q5_k: {
      const bool five = type == QuantType::q5_k;
      const int chunk = e / 64, within = e % 64, l = within % 32;
      const bool high = within >= 32;
      const std::uint8_t* qs = b + (five ? 48 : 16);
      int q = nibble(qs[chunk * 32 + l], high);
      if (five) q += 16 * ((b[16 + l] >> (2 * chunk + (high ? 1 : 0))) & 1);
      int sc, mn;
      k4_scale_min(b + 4, e / 32, sc, mn);
      return double{half(b)} * sc * q - double{half(b + 2)} * mn;
    }
    case QuantType::q6_k: {
      const int half_i = e / 128, within = e % 128, quarter = within / 32, l = within % 32;
      const std::uint8_t low_byte = b[half_i * 64 + (quarter % 2) * 32 + l];
      const int low = nibble(low_byte, quarter >= 2);
      const int high = (b[128 + half_i * 32 + l] >> (2 * quarter)) & 3;
      const auto sc = static_cast<std::int8_t>(b[192 + e / 16]);
      return double{half(b + 208)} * sc * ((low | (high << 4)) - 32);
    }
    case QuantType::affine4: case QuantType::affine8: break;  // not blocks: kernel_affine_test
  }
  return 0;
}

// Where each type keeps its f16 fields: they get finite values, the rest of
// a block random bytes.
std::vector<int> f16_fields(QuantType type) {
  switch (type) {
    case QuantType::q8_0: case QuantType::q4_0: case QuantType::q5_0: return {0};
    case QuantType::q4_1: case QuantType::q5_1: return {0, 2};
    case QuantType::q2_k: return {80, 82};
    case QuantType::q3_k: return {108};
    case QuantType::q4_k: case QuantType::q5_k: return {0, 2};
    case QuantType::q6_k: return {208};
    case QuantType::affine4: case QuantType::affine8: break;  // kernel_affine_test
  }
  return {};
}

std::vector<std::uint8_t> random_blocks(QuantType type, std::size_t blocks, std::mt19937& rng) {
  const std::size_t bytes = quant_block_bytes(type);
  std::vector<std::uint8_t> w(blocks * bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (auto& v : w) v = static_cast<std::uint8_t>(byte(rng));
  for (std::size_t b = 0; b < blocks; ++b) {
    for (int at : f16_fields(type)) {
      const auto h = static_cast<_Float16>(scale(rng));
      std::memcpy(w.data() + b * bytes + at, &h, 2);
    }
  }
  return w;
}

constexpr QuantType kTypes[] = {QuantType::q8_0, QuantType::q4_0, QuantType::q4_1, QuantType::q5_0,
                                QuantType::q5_1, QuantType::q2_k, QuantType::q3_k, QuantType::q4_k,
                                QuantType::q5_k, QuantType::q6_k};

const char* name(QuantType t) {
  static const char* names[] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k"};
  return names[static_cast<int>(t)];
}

TEST(KernelQuant, DequantizeRowMatchesTheFormatDefinition) {
  std::mt19937 rng(14);
  for (QuantType type : kTypes) {
    const std::size_t be = quant_block_elements(type), blocks = 3, k = be * blocks;
    const auto w = random_blocks(type, blocks, rng);
    std::vector<float> out(k);
    dequantize_row(type, w.data(), k, out.data());
    for (std::size_t e = 0; e < k; ++e) {
      const double want = reference_weight(type, w.data() + e / be * quant_block_bytes(type), static_cast<int>(e % be));
      ASSERT_NEAR(out[e], want, 1e-6 * std::abs(want) + 1e-9) << name(type) << " weight " << e;
    }
  }
}

TEST(KernelQuant, EveryTypeOnEveryInstructionSetMatchesTheReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512}) {
    if (!isa_allowed(isa)) continue;
    for (QuantType type : kTypes) {
      const std::size_t be = quant_block_elements(type), bb = quant_block_bytes(type);
      const std::size_t k = be == 256 ? 512 : 96, n = 19;
      const auto w = random_blocks(type, n * k / be, rng);
      for (std::size_t m : {1, 2, 3, 5, 8, 13, 70}) {
        std::vector<float> x(m * k), y(m * n, NAN);
        for (auto& v : x) v = normal(rng);
        detail::quant_linear_with(isa, {x.data(), m, k, w.data(), type, n, y.data()});
        for (std::size_t i = 0; i < m; ++i) {
          for (std::size_t j = 0; j < n; ++j) {
            double sum = 0, bound = 0;
            for (std::size_t p = 0; p < k; ++p) {
              const double wv = reference_weight(type, w.data() + (j * k + p) / be * bb, static_cast<int>(p % be));
              sum += x[i * k + p] * wv;
              bound += std::abs(x[i * k + p] * wv);
            }
            ASSERT_NEAR(y[i * n + j], sum, (k + 2) * 0x1p-24 * bound)
                << isa_name(isa) << " " << name(type) << " m=" << m << " i=" << i << " j=" << j;
          }
        }
      }
    }
  }
}

// The integer path (AVX-512 VNNI): the activations are rounded to int8 per
// 32 values, each off by at most half its block's step max|x| / 127, so each
// output may be off by sum_p |w_p| * step_p / 2 beyond the f32 bound above
// (1% more for the rounding of the step itself).
TEST(KernelQuant, IntegerPathMatchesTheReferenceWithinTheActivationRounding) {
  if (!detail::quant_dot_supported())
    GTEST_SKIP() << "no AVX-512 VNNI (or NUVEC_QUANT_DOT=off, or NUVEC_KERNEL_ISA below avx512)";
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (QuantType type : kTypes) {
    const std::size_t be = quant_block_elements(type), bb = quant_block_bytes(type);
    // Blocks of 32: rows of one group of 64 and of three (Q8_0's and Q4_0's
    // path takes two groups per step, then a last one alone).
    for (std::size_t k : be == 256 ? std::vector<std::size_t>{512} : std::vector<std::size_t>{64, 192, 320}) {
      const std::size_t n = 21;
      const auto w = random_blocks(type, n * k / be, rng);
      // Once, more rows than a pass holds: 256 rows on the panel path, then
      // the last 5 on the dot_rows / signed_rows paths.
      std::vector<std::size_t> ms{1, 2, 3, 6, 7, 8, 9, 13, 16, 23, 70};
      if (k == 64) ms.push_back(detail::kQuantDotRowsPerPass + 5);
      for (std::size_t m : ms) {
        std::vector<float> x(m * k), y(m * n, NAN);
        for (auto& v : x) v = normal(rng);
        x[5] = 0;  // a block may hold zeros; one row is all zero below
        for (std::size_t p = 0; p < k && m > 2; ++p) x[2 * k + p] = 0;
        std::vector<std::uint8_t> workspace(quant_linear_workspace_bytes(m, k));
        ASSERT_EQ(workspace.size(), detail::quant_dot_layout(k, m).bytes);
        quant_linear(x.data(), m, k, w.data(), type, n, y.data(), workspace.data());
        for (std::size_t i = 0; i < m; ++i) {
          for (std::size_t j = 0; j < n; ++j) {
            double sum = 0, bound = 0, rounding = 0;
            for (std::size_t p = 0; p < k; ++p) {
              const double wv = reference_weight(type, w.data() + (j * k + p) / be * bb, static_cast<int>(p % be));
              float amax = 0;
              for (std::size_t e = p / 32 * 32; e < p / 32 * 32 + 32; ++e) {
                amax = std::max(amax, std::abs(x[i * k + e]));
              }
              sum += x[i * k + p] * wv;
              bound += std::abs(x[i * k + p] * wv);
              rounding += std::abs(wv) * amax / 127.0 / 2.0 * 1.01;
            }
            ASSERT_NEAR(y[i * n + j], sum, (k + 2) * 0x1p-24 * bound + rounding)
                << name(type) << " k=" << k << " m=" << m << " i=" << i << " j=" << j;
          }
        }
      }
    }
  }
}

// Decode (one x row) of the K-quants runs each task's rows as four streams
// (decode_kquant_rows): its sums are exact integers per 64 weights and then
// the same float steps as the tiles of more rows, so row 0 of a two-row
// product with the same activations twice is the same bit for bit; n = 203
// gives tasks of many rows (runs of several) and a last task with rows left
// over, at every thread count the pool has. (Q8_0 and Q4_0 have a decode of
// their own, whose scales are multiplied in another order.)
TEST(KernelQuant, IntegerDecodeEqualsTheTilePathBitForBit) {
  if (!detail::quant_dot_supported())
    GTEST_SKIP() << "no AVX-512 VNNI (or NUVEC_QUANT_DOT=off, or NUVEC_KERNEL_ISA below avx512)";
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (QuantType type : kTypes) {
    if (type == QuantType::q8_0 || type == QuantType::q4_0) continue;
    const std::size_t k = 512, n = 203;
    const auto w = random_blocks(type, n * k / quant_block_elements(type), rng);
    std::vector<float> x(2 * k), one(n, NAN), two(2 * n, NAN);
    for (std::size_t p = 0; p < k; ++p) x[p] = x[k + p] = normal(rng);
    std::vector<std::uint8_t> workspace(quant_linear_workspace_bytes(2, k));
    quant_linear(x.data(), 1, k, w.data(), type, n, one.data(), workspace.data());
    quant_linear(x.data(), 2, k, w.data(), type, n, two.data(), workspace.data());
    for (std::size_t j = 0; j < n; ++j) {
      ASSERT_EQ(one[j], two[j]) << name(type) << " j=" << j;
      ASSERT_EQ(two[n + j], two[j]) << name(type) << " j=" << j;
    }
  }
}

TEST(KernelQuant, RefusesRowsThatAreNotWholeBlocks) {
  std::vector<float> x(100), y(1);
  std::vector<std::uint8_t> w(1000);
  EXPECT_THROW(quant_linear(x.data(), 1, 100, w.data(), QuantType::q4_k, 1, y.data()), InvalidArgument);
  EXPECT_THROW(quant_linear(x.data(), 1, 48, w.data(), QuantType::q8_0, 1, y.data()), InvalidArgument);
  EXPECT_THROW(quant_linear(nullptr, 1, 32, w.data(), QuantType::q8_0, 1, y.data()), InvalidArgument);
}

}  // namespace
}  // namespace nuvec::lm::kernels
