// The AMX path of linear() (linear_amx.cc), under its default blocking and
// the others the roofline measures (W packed or loaded from its rows,
// prefetch, panel sizes), against the reference
// loops with x rounded to bf16, held to the f32 bound (kernel_linear_test.cc
// says why).
// Two ways of running it:
// - on the tile unit itself, where the CPU has AMX and Linux grants its use
//   (skipped elsewhere; the H200 machine's Xeon runs it);
// - with the tile instructions done in software (SoftwareTiles), on any CPU
//   with AVX512_BF16, so that the packing of x and of W's chunks, the task
//   split, the direct loads of W, the zero-padded edge tiles and the stores
//   are checked in CI too.
// Every output starts as NaN, so one left unwritten fails; the weights are
// in a read-only mapping one element past a page start, so a write to them
// crashes and no alignment is assumed; the workspace is exactly the size
// asked for (ASan sees overruns).
#include <sys/mman.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/linear.h"
#include "lm/kernels/linear_kernels.h"
#include "lm/kernels/machine_roofline.h"
#include "lm/kernels/thread_pool.h"

namespace nuvec::lm::kernels {
namespace {

using detail::LinearCall;

std::uint16_t to_bf16(float f) {  // round to nearest even (no NaNs here)
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<std::uint16_t>(bits >> 16);
}
float from_bf16(std::uint16_t b) {
  const std::uint32_t bits = std::uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// n x k bf16 weights, read-only, starting one element past a page.
class Weights {
 public:
  Weights(std::size_t n, std::size_t k, std::mt19937& rng) : bytes_(n * k * 2 + 4) {
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw std::bad_alloc();
    data_ = reinterpret_cast<std::uint16_t*>(static_cast<char*>(base_) + 2);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (std::size_t i = 0; i < n * k; ++i) data_[i] = to_bf16(dist(rng));
    if (mprotect(base_, bytes_, PROT_READ) != 0) throw std::runtime_error("mprotect");
  }
  ~Weights() { munmap(base_, bytes_); }
  Weights(const Weights&) = delete;
  Weights& operator=(const Weights&) = delete;
  const std::uint16_t* data() const { return data_; }

 private:
  std::size_t bytes_;
  void* base_;
  std::uint16_t* data_;
};

enum class Tiles { hardware, software };

// One product on random data through the AMX path, checked element by
// element; returns false at the first output out of bounds (reported).
// `blocking`: linear_amx_with()'s; none: linear_amx() (the defaults).
using Packed = std::optional<detail::AmxBlocking>;

void run(Tiles tiles, const Packed& packed, const LinearCall& call) {
  if (packed && tiles == Tiles::hardware) return detail::linear_amx_with(call, *packed);
  if (packed) return detail::linear_amx_software(call, *packed);
  if (tiles == Tiles::hardware) return detail::linear_amx(call);
  detail::linear_amx_software(call);
}

// One size for every blocking.
std::size_t workspace(const Packed&, std::size_t m, std::size_t k, std::size_t n) {
  return detail::workspace_amx(m, k, n, WeightType::bf16);
}

std::string describe(const Packed& packed) {
  if (!packed) return "linear_amx";
  return std::string(packed->pack_w ? "W packed" : "W from its rows") + ", prefetch " +
         std::to_string(packed->prefetch) + ", " + std::to_string(packed->panel_strips) + " strips a panel";
}

bool product_matches(Tiles tiles, std::size_t m, std::size_t k, std::size_t n, const Packed& packed = {}) {
  std::mt19937 rng(static_cast<unsigned>(m * 7919 + k * 31 + n));
  const Weights w(n, k, rng);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(m * k), y(m * n, std::nanf(""));
  for (auto& v : x) v = dist(rng);
  const std::size_t bytes = workspace(packed, m, k, n);
  void* ws = ::operator new(bytes, std::align_val_t{64});
  const LinearCall call{x.data(), m, k, w.data(), WeightType::bf16, n, y.data(), ws, Precision::fast};
  run(tiles, packed, call);
  ::operator delete(ws, std::align_val_t{64});
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double exact = 0, scale = 0;
      for (std::size_t p = 0; p < k; ++p) {
        const double product = double{from_bf16(to_bf16(x[i * k + p]))} * double{from_bf16(w.data()[j * k + p])};
        exact += product;
        scale += std::fabs(product);
      }
      const double tolerance = (double(k) + 2) * std::ldexp(1.0, -24) * scale + 1e-30;
      const double error = std::fabs(double{y[i * n + j]} - exact);
      if (!(error <= tolerance)) {
        ADD_FAILURE() << (tiles == Tiles::hardware ? "hardware" : "software") << " tiles m=" << m << " k=" << k
                      << " n=" << n << " (" << describe(packed) << ") at [" << i << "][" << j << "]: got " << y[i * n + j] << ", exact "
                      << exact << ", tolerance " << tolerance;
        return false;
      }
    }
  return true;
}

// Shapes around every edge: m and n below, at and past one and two tiles
// (16) and micro-blocks (32), k below, at and past one step (32) and odd;
// linear_amx(), W loaded from its rows (zero-padded copies at the edges)
// with and without prefetch, and panels of one and three strips.
void edge_shapes(Tiles tiles) {
  for (const Packed& packed : {Packed{}, Packed{{false, 0, 1}}, Packed{{false, 2, 2}}, Packed{{true, 2, 3}}})
    for (std::size_t m : {5, 16, 17, 32, 40})
      for (std::size_t k : {1, 2, 31, 32, 33, 64, 100})
        for (std::size_t n : {1, 15, 16, 33, 64, 70})
          if (!product_matches(tiles, m, k, n, packed)) return;
}

bool has_amx() { return isa_supported(Isa::amx); }

TEST(KernelAmxSoftware, EdgeShapes) {
  if (!isa_supported(Isa::avx512bf16)) GTEST_SKIP() << "the packing needs AVX512_BF16";
  edge_shapes(Tiles::software);
}

// k so long that a block of x holds only 32 rows (4 MiB / (k * 2 bytes)), so
// m = 70 takes three blocks, the last one partial.
TEST(KernelAmxSoftware, RowsPastOneBlockOfX) {
  if (!isa_supported(Isa::avx512bf16)) GTEST_SKIP() << "the packing needs AVX512_BF16";
  EXPECT_EQ(detail::amx_x_block_bytes(70, 65600), std::size_t{32} * 65600 * 2);
  EXPECT_TRUE(product_matches(Tiles::software, 70, 65600, 3));
  EXPECT_TRUE(product_matches(Tiles::software, 70, 65600, 3, Packed{{false, 1, 1}}));
}

// The same k puts only 32 outputs in a packed chunk of W, so n = 40 takes
// two chunks, the second of 8 outputs.
TEST(KernelAmxSoftware, OutputsPastOneChunkOfW) {
  if (!isa_supported(Isa::avx512bf16)) GTEST_SKIP() << "the packing needs AVX512_BF16";
  EXPECT_EQ(detail::amx_w_chunk_bytes(40, 65600), std::size_t{32} * 65600 * 2);
  EXPECT_TRUE(product_matches(Tiles::software, 5, 65600, 40));
}

TEST(KernelAmxHardware, EdgeShapes) {
  if (!has_amx()) GTEST_SKIP() << "no AMX-BF16 here (or Linux refused the tile data)";
  edge_shapes(Tiles::hardware);
}

TEST(KernelAmxHardware, PrefillShapesAndBlocks) {
  if (!has_amx()) GTEST_SKIP() << "no AMX-BF16 here (or Linux refused the tile data)";
  EXPECT_TRUE(product_matches(Tiles::hardware, 779, 1031, 2085));
  EXPECT_TRUE(product_matches(Tiles::hardware, 512, 2048, 256));
  EXPECT_TRUE(product_matches(Tiles::hardware, 70, 65600, 3));
  EXPECT_TRUE(product_matches(Tiles::hardware, 779, 1031, 2085, Packed{{false, 0, 1}}));
  EXPECT_TRUE(product_matches(Tiles::hardware, 512, 2048, 256, Packed{{true, 2, 4}}));
  // More outputs than one packed chunk of W holds (4 MiB / (k * 2 bytes)).
  EXPECT_TRUE(product_matches(Tiles::hardware, 40, 4096, 600));
}

// Every blocking computes the same numbers, bit for bit (the sums run in the
// same order: over k, in steps of 32, whatever the blocking), and the task
// split leaves no output unwritten with one thread or many.
void blockings_agree(Tiles tiles) {
  std::mt19937 rng(3);
  const std::size_t m = 96, k = 700, n = 130;
  const Weights w(n, k, rng);
  std::vector<float> x(m * k);
  for (auto& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  std::vector<float> first;
  const int threads_before = threads();
  struct Run {
    Packed packed;
    int threads;
  };
  for (const auto& [b, t] : {Run{{}, threads_before}, Run{{{false, 0, 1}}, threads_before},
                             Run{{{true, 0, 2}}, 1}, Run{{{false, 2, 4}}, 7}, Run{{{true, 1, 1}}, 13}}) {
    set_threads(t);
    std::vector<float> y(m * n, std::nanf(""));
    std::vector<char> ws(workspace(b, m, k, n) + 64);
    void* aligned = reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(ws.data()) + 63) / 64 * 64);
    const LinearCall call{x.data(), m, k, w.data(), WeightType::bf16, n, y.data(), aligned, Precision::fast};
    run(tiles, b, call);
    if (first.empty()) {
      first = y;
      for (float v : y) ASSERT_FALSE(std::isnan(v));
    } else {
      EXPECT_EQ(first, y) << describe(b) << ", " << t << " threads";
    }
  }
  set_threads(threads_before);
}

TEST(KernelAmxSoftware, BlockingsAreTheSameProduct) {
  if (!isa_supported(Isa::avx512bf16)) GTEST_SKIP() << "the packing needs AVX512_BF16";
  blockings_agree(Tiles::software);
}

TEST(KernelAmxHardware, BlockingsAreTheSameProduct) {
  if (!has_amx()) GTEST_SKIP() << "no AMX-BF16 here (or Linux refused the tile data)";
  blockings_agree(Tiles::hardware);
}

// The tile peak is measured where there are tiles, and is 0 elsewhere.
TEST(KernelAmxHardware, TilePeakIsMeasuredOnlyWithAmx) {
  const MatmulRate peak = measure_amx_tile_peak(2);
  if (has_amx()) {
    EXPECT_GT(peak.flops_per_second, 1e11);  // a single Sapphire Rapids core does ~2e12
  } else {
    EXPECT_EQ(peak.flops_per_second, 0.0);
  }
}

// linear()'s scratch is the packed x block and the packed chunk of W (each
// bounded whatever m and n are) or what the f32 path needs, never anything
// that grows with n or the thread count.
TEST(KernelAmxWorkspace, BoundedByTheXBlockAndTheWChunk) {
  for (std::size_t k : {64, 2048, 5632, 8192}) {
    const std::size_t ws = detail::workspace_amx(512, k, 32000, WeightType::bf16);
    EXPECT_EQ(ws, std::max(detail::workspace_avx512(512, k, 32000, WeightType::bf16),
                           detail::amx_x_block_bytes(512, k) + detail::amx_w_chunk_bytes(32000, k)));
    EXPECT_LE(detail::amx_x_block_bytes(100000, k), std::size_t{4} << 20) << k;
    EXPECT_LE(detail::amx_w_chunk_bytes(128000, k), std::size_t{4} << 20) << k;
    EXPECT_EQ(detail::workspace_amx(512, k, 32000, WeightType::bf16),
              detail::workspace_amx(512, k, 128000, WeightType::bf16));
  }
  // A chunk is only as large as W: 256 outputs of k = 2048.
  EXPECT_EQ(detail::amx_w_chunk_bytes(256, 2048), std::size_t{256} * 2048 * 2);
  const int threads_before = threads();
  set_threads(1);
  const std::size_t one = detail::workspace_amx(512, 2048, 2048, WeightType::bf16);
  set_threads(13);
  EXPECT_EQ(detail::workspace_amx(512, 2048, 2048, WeightType::bf16), one);
  set_threads(threads_before);
  EXPECT_EQ(detail::workspace_amx(kStreamingRows, 2048, 2048, WeightType::bf16), 0u);
  EXPECT_EQ(detail::workspace_amx(512, 2048, 2048, WeightType::f32),
            detail::workspace_avx512bf16(512, 2048, 2048, WeightType::f32));
}

}  // namespace
}  // namespace nuvec::lm::kernels
