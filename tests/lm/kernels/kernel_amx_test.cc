// The AMX path of linear() (linear_amx.cc) against the reference
// loops with x rounded to bf16, held to the f32 bound (kernel_linear_test.cc
// says why).
// Two ways of running it:
// - on the tile unit itself, where the CPU has AMX and Linux grants its use
//   (skipped elsewhere; the H200 machine's Xeon runs it);
// - with the tile instructions done in software (SoftwareTiles), on any CPU
//   with AVX512_BF16, so that the packing of x, the task split, the direct
//   loads of W, the zero-padded edge tiles and the stores are checked in CI
//   too.
// Both skip where NUVEC_KERNEL_ISA caps the kernels below what they need
// (isa_allowed), as on a CPU without it. The workspace sizes are plain
// arithmetic (linear_workspace.cc) and are checked on every CPU.
// Every output starts as NaN, so one left unwritten fails; the weights are
// in a read-only mapping one element past a page start, so a write to them
// crashes and no alignment is assumed; the workspace is exactly the size
// asked for (ASan sees overruns).
#include <sys/mman.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
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
#include "nuvec/error.h"

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
void run(Tiles tiles, const LinearCall& call) {
  if (tiles == Tiles::hardware) return detail::linear_with(Isa::amx, call);
  detail::linear_on_software_tiles(call);
}

bool product_matches(Tiles tiles, std::size_t m, std::size_t k, std::size_t n) {
  std::mt19937 rng(static_cast<unsigned>(m * 7919 + k * 31 + n));
  const Weights w(n, k, rng);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(m * k), y(m * n, std::nanf(""));
  for (auto& v : x) v = dist(rng);
  const std::size_t bytes = detail::workspace_amx(m, k, n, WeightType::bf16);
  void* ws = ::operator new(bytes, std::align_val_t{64});
  const LinearCall call{x.data(), m, k, w.data(), WeightType::bf16, n, y.data(), ws, Precision::fast};
  run(tiles, call);
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
                      << " n=" << n << " at [" << i << "][" << j << "]: got " << y[i * n + j] << ", exact "
                      << exact << ", tolerance " << tolerance;
        return false;
      }
    }
  return true;
}

// Shapes around every edge: m and n below, at and past one and two tiles
// (16) and micro-blocks (32), k below, at and past one step (32) and odd.
void edge_shapes(Tiles tiles) {
  for (std::size_t m : {5, 16, 17, 32, 40})
    for (std::size_t k : {1, 2, 31, 32, 33, 64, 100})
      for (std::size_t n : {1, 15, 16, 33, 64, 70})
        if (!product_matches(tiles, m, k, n)) return;
}

bool has_amx() { return isa_allowed(Isa::amx); }
bool has_avx512bf16() { return isa_allowed(Isa::avx512bf16); }

TEST(KernelAmxSoftware, EdgeShapes) {
  if (!has_avx512bf16()) GTEST_SKIP() << "the packing needs AVX512_BF16";
  edge_shapes(Tiles::software);
}

// k so long that a block of x holds only 32 rows (4 MiB / (k * 2 bytes)), so
// m = 70 takes three blocks, the last one partial.
TEST(KernelAmxSoftware, RowsPastOneBlockOfX) {
  if (!has_avx512bf16()) GTEST_SKIP() << "the packing needs AVX512_BF16";
  EXPECT_TRUE(product_matches(Tiles::software, 70, 65600, 3));
}

TEST(KernelAmxHardware, EdgeShapes) {
  if (!has_amx()) GTEST_SKIP() << "no AMX-BF16 here (or Linux refused the tile data, or NUVEC_KERNEL_ISA caps below it)";
  edge_shapes(Tiles::hardware);
}

TEST(KernelAmxHardware, PrefillShapesAndBlocks) {
  if (!has_amx()) GTEST_SKIP() << "no AMX-BF16 here (or Linux refused the tile data, or NUVEC_KERNEL_ISA caps below it)";
  EXPECT_TRUE(product_matches(Tiles::hardware, 779, 1031, 2085));
  EXPECT_TRUE(product_matches(Tiles::hardware, 512, 2048, 256));
  EXPECT_TRUE(product_matches(Tiles::hardware, 70, 65600, 3));
}

// The task split leaves no output unwritten and changes no number, with
// one thread or many (the sums run over k in the same order whatever the
// split).
void threads_agree(Tiles tiles) {
  std::mt19937 rng(3);
  const std::size_t m = 96, k = 700, n = 130;
  const Weights w(n, k, rng);
  std::vector<float> x(m * k);
  for (auto& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  std::vector<float> first;
  const int threads_before = threads();
  for (int t : {threads_before, 1, 7, 13}) {
    set_threads(t);
    std::vector<float> y(m * n, std::nanf(""));
    std::vector<char> ws(detail::workspace_amx(m, k, n, WeightType::bf16) + 64);
    void* aligned = reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(ws.data()) + 63) / 64 * 64);
    const LinearCall call{x.data(), m, k, w.data(), WeightType::bf16, n, y.data(), aligned, Precision::fast};
    run(tiles, call);
    if (first.empty()) {
      first = y;
      for (float v : y) ASSERT_FALSE(std::isnan(v));
    } else {
      EXPECT_EQ(first, y) << t << " threads";
    }
  }
  set_threads(threads_before);
}

TEST(KernelAmxSoftware, ThreadCountsAreTheSameProduct) {
  if (!has_avx512bf16()) GTEST_SKIP() << "the packing needs AVX512_BF16";
  threads_agree(Tiles::software);
}

TEST(KernelAmxHardware, ThreadCountsAreTheSameProduct) {
  if (!has_amx()) GTEST_SKIP() << "no AMX-BF16 here (or Linux refused the tile data, or NUVEC_KERNEL_ISA caps below it)";
  threads_agree(Tiles::hardware);
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

// What the tile loads leave of the peak: measured where there are tiles (at
// most the peak, and a real rate), 0 elsewhere; regions of whole 4 KiB only.
TEST(KernelAmxHardware, TileLoadRateIsBoundedByThePeak) {
  EXPECT_THROW(measure_amx_tile_load_rate({1000}), InvalidArgument);
  EXPECT_THROW(measure_amx_tile_load_rate({6144}), InvalidArgument);
  EXPECT_THROW(measure_amx_tile_load_rate({4096}, 0), InvalidArgument);
  const double l1 = measure_amx_tile_load_rate({16u << 10}, 3);
  const double strided = measure_amx_tile_load_rate({128u << 10, true, 2}, 3);
  if (has_amx()) {
    const double peak = measure_amx_tile_peak(3).flops_per_second;
    EXPECT_GT(l1, 1e10);
    EXPECT_GT(strided, 1e10);
    EXPECT_LT(l1, 1.2 * peak);  // the peak's own calls vary a little
  } else {
    EXPECT_EQ(l1, 0.0);
    EXPECT_EQ(strided, 0.0);
  }
}

// linear()'s scratch is the packed x block (bounded whatever m and n are) or
// what the f32 path needs, never anything that grows with n or the thread
// count.
TEST(KernelAmxWorkspace, BoundedByTheXBlock) {
  for (std::size_t k : {64, 2048, 5632, 8192}) {
    const std::size_t ws = detail::workspace_amx(512, k, 32000, WeightType::bf16);
    EXPECT_EQ(ws, std::max(detail::workspace_avx512(512, k, 32000, WeightType::bf16),
                           detail::amx_x_block_bytes(512, k)));
    EXPECT_LE(detail::amx_x_block_bytes(100000, k), std::size_t{4} << 20) << k;
    EXPECT_EQ(detail::workspace_amx(512, k, 32000, WeightType::bf16),
              detail::workspace_amx(512, k, 128000, WeightType::bf16));
  }
  const int threads_before = threads();
  set_threads(1);
  const std::size_t one = detail::workspace_amx(512, 2048, 2048, WeightType::bf16);
  set_threads(13);
  EXPECT_EQ(detail::workspace_amx(512, 2048, 2048, WeightType::bf16), one);
  set_threads(threads_before);
  EXPECT_EQ(detail::workspace_amx(kStreamingRows, 2048, 2048, WeightType::bf16), 0u);
  EXPECT_EQ(detail::workspace_amx(512, 2048, 2048, WeightType::f32),
            detail::workspace_avx512bf16(512, 2048, 2048, WeightType::f32));
  // k = 65600: a row of x packs to 65600 * 2 bytes (whole steps of 32), so a
  // 4 MiB block holds fewer than 32 rows and takes one micro-block, 32 rows.
  EXPECT_EQ(detail::amx_x_block_rows(70, 65600), 32u);
  EXPECT_EQ(detail::amx_x_block_bytes(70, 65600), std::size_t{32} * 65600 * 2);
  // Few rows of x: the block is m rounded up to a micro-block, k to a step.
  EXPECT_EQ(detail::amx_x_block_bytes(5, 33), std::size_t{32} * 64 * 2);
}

// Where the tiles may not run (no AMX, or NUVEC_KERNEL_ISA below it), the
// checked entry points refuse them rather than run instructions this CPU
// lacks or this run ruled out; the refusal names the path.
TEST(KernelAmxWorkspace, PathsNotAllowedAreRefused) {
  if (has_amx()) GTEST_SKIP() << "AMX is allowed here: nothing to refuse";
  std::mt19937 rng(1);
  const Weights w(16, 64, rng);
  std::vector<float> x(16 * 64, 1.0f), y(16 * 16);
  std::vector<char> ws(detail::workspace_amx(16, 64, 16, WeightType::bf16) + 64);
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(ws.data()) + 63) / 64 * 64);
  const LinearCall call{x.data(), 16, 64, w.data(), WeightType::bf16, 16, y.data(), aligned, Precision::fast};
  try {
    detail::linear_with(Isa::amx, call);
    ADD_FAILURE() << "linear_with(amx) ran where AMX is not allowed";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("amx"), std::string::npos) << e.what();
  }
  if (!has_avx512bf16()) {
    EXPECT_THROW(detail::linear_on_software_tiles(call), InvalidArgument);
  }
}

}  // namespace
}  // namespace nuvec::lm::kernels
