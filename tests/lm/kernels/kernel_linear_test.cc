// linear() against the reference loops (double sums), on every instruction
// set this CPU supports, for f32/f16/bf16 weights and awkward shapes: m = 1
// and other few-row (streaming) counts, m not a multiple of the tile rows,
// k odd or not a multiple of the vector width, n odd, and one shape that
// crosses every blocking boundary. The weights live in a read-only mapping,
// so a kernel that wrote to them would crash, and the workspace is exactly
// the size asked for, so ASan sees any overrun.
//
// Tolerance, per output: (k + 2) * 2^-24 * S with S = sum_p |x_p * w_p|
// (exact, in double), the classical bound for an f32 sum of k products in any
// order. Every path is held to it. The bf16 fast path (bf16 weights,
// Precision::fast, AVX512_BF16, more than kStreamingRows rows) rounds the
// activations to bf16 (to nearest even) before it multiplies; its products
// of two bf16 are exact in f32, so it is held to the same bound against the
// reference computed with x rounded the same way. How far that rounding
// moves the result from f32 activations is Bf16FastRoundsOnlyTheActivations'.
#include <sys/mman.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <new>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/linear.h"
#include "lm/kernels/linear_kernels.h"
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

std::uint16_t to_f16(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  std::uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

std::size_t element_size(WeightType t) { return t == WeightType::f32 ? 4 : 2; }
const char* name(WeightType t) { return t == WeightType::f32 ? "f32" : t == WeightType::f16 ? "f16" : "bf16"; }

// Weights of one type in a read-only anonymous mapping, starting `skew`
// elements past the page start so nothing may assume more than element
// alignment.
class ReadOnlyWeights {
 public:
  ReadOnlyWeights(WeightType type, std::size_t n, std::size_t k, std::mt19937& rng, std::size_t skew = 1)
      : type_(type), bytes_((n * k + skew) * element_size(type) + 1) {
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<char*>(base_) + skew * element_size(type);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (std::size_t i = 0; i < n * k; ++i) {
      const float v = dist(rng);
      switch (type) {
        case WeightType::f32: std::memcpy(data_ + 4 * i, &v, 4); break;
        case WeightType::f16: {
          const std::uint16_t b = to_f16(v);
          std::memcpy(data_ + 2 * i, &b, 2);
          break;
        }
        case WeightType::bf16: {
          const std::uint16_t b = to_bf16(v);
          std::memcpy(data_ + 2 * i, &b, 2);
          break;
        }
      }
    }
    if (mprotect(base_, bytes_, PROT_READ) != 0) throw std::runtime_error("mprotect");
  }
  ~ReadOnlyWeights() { munmap(base_, bytes_); }
  ReadOnlyWeights(const ReadOnlyWeights&) = delete;
  ReadOnlyWeights& operator=(const ReadOnlyWeights&) = delete;

  const void* data() const { return data_; }
  WeightType type() const { return type_; }

  float at(std::size_t i) const {
    switch (type_) {
      case WeightType::f32: {
        float f;
        std::memcpy(&f, data_ + 4 * i, 4);
        return f;
      }
      case WeightType::f16: {
        _Float16 h;
        std::memcpy(&h, data_ + 2 * i, 2);
        return static_cast<float>(h);
      }
      case WeightType::bf16: {
        std::uint16_t b;
        std::memcpy(&b, data_ + 2 * i, 2);
        const std::uint32_t bits = std::uint32_t{b} << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
      }
    }
    return 0;
  }

 private:
  WeightType type_;
  std::size_t bytes_;
  void* base_;
  char* data_;
};

// Exactly `bytes` of 64-byte-aligned scratch (ASan reports any overrun).
struct Workspace {
  explicit Workspace(std::size_t bytes)
      : ptr(bytes ? ::operator new(bytes, std::align_val_t{64}) : nullptr), size(bytes) {}
  ~Workspace() {
    if (ptr) ::operator delete(ptr, std::align_val_t{64});
  }
  void* ptr;
  std::size_t size;
};

std::vector<float> random_x(std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(count);
  for (auto& v : x) v = dist(rng);
  return x;
}

// Whether linear_with(isa) rounds the activations to bf16 for this call.
bool rounds_activations(Isa isa, WeightType type, Precision precision, std::size_t m) {
  return (isa == Isa::avx512bf16 || isa == Isa::amx) && type == WeightType::bf16 && precision == Precision::fast &&
         m > kStreamingRows;
}

float bf16_value(float f) {
  const std::uint32_t bits = std::uint32_t{to_bf16(f)} << 16;
  float rounded;
  std::memcpy(&rounded, &bits, 4);
  return rounded;
}

// One call of linear_with() on random data, the inputs kept for the reference.
struct Product {
  Product(Isa isa, WeightType type, Precision precision, std::size_t m, std::size_t k, std::size_t n)
      : m(m), k(k), n(n), rng(static_cast<unsigned>(m * 131 + k * 7 + n)), w(type, n, k, rng), x(random_x(m * k, rng)),
        y(m * n, std::nanf("")) {  // every output must be written
    Workspace ws(detail::workspace_with(isa, m, k, n, type));
    detail::linear_with(isa, LinearCall{x.data(), m, k, w.data(), type, n, y.data(), ws.ptr, precision});
  }
  std::size_t m, k, n;
  std::mt19937 rng;
  ReadOnlyWeights w;
  std::vector<float> x, y;
};

// Compares the rows listed (all rows if empty) of a product with the
// reference, computed from x as given or rounded to bf16, and expects every
// output within the f32 bound.
void compare(const Product& p, bool round_x, const std::string& what, std::vector<std::size_t> rows = {}) {
  if (rows.empty())
    for (std::size_t i = 0; i < p.m; ++i) rows.push_back(i);
  for (std::size_t i : rows)
    for (std::size_t j = 0; j < p.n; ++j) {
      double exact = 0, scale = 0;
      for (std::size_t q = 0; q < p.k; ++q) {
        const float xq = p.x[i * p.k + q];
        const double product = double{round_x ? bf16_value(xq) : xq} * double{p.w.at(j * p.k + q)};
        exact += product;
        scale += std::fabs(product);
      }
      const double tolerance = (double(p.k) + 2) * std::ldexp(1.0, -24) * scale + 1e-30;
      const double error = std::fabs(double{p.y[i * p.n + j]} - exact);
      EXPECT_LE(error, tolerance) << what << " m=" << p.m << " k=" << p.k << " n=" << p.n << " at [" << i << "]["
                                  << j << "]: got " << p.y[i * p.n + j] << ", exact " << exact;
      if (!(error <= tolerance)) return;  // one report per shape is enough
    }
}

// Runs one shape on one instruction set and compares it with the reference
// of what that path computes.
void run_and_compare(Isa isa, WeightType type, Precision precision, std::size_t m, std::size_t k, std::size_t n,
                     std::vector<std::size_t> rows = {}) {
  const Product p(isa, type, precision, m, k, n);
  compare(p, rounds_activations(isa, type, precision, m),
          std::string(isa_name(isa)) + " " + name(type) + (precision == Precision::exact ? " exact" : " fast"),
          std::move(rows));
}

// The instruction sets this run may use: the CPU's, up to NUVEC_KERNEL_ISA
// where it caps them (scripts/test.sh's capped runs test as a narrower CPU
// would).
std::vector<Isa> allowed_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512, Isa::avx512bf16, Isa::amx})
    if (isa_allowed(isa)) isas.push_back(isa);
  return isas;
}

class KernelLinear : public ::testing::TestWithParam<Isa> {};

TEST_P(KernelLinear, FewRowsStreamTheWeights) {
  for (WeightType type : {WeightType::f32, WeightType::f16, WeightType::bf16})
    for (std::size_t m : {1, 2, 3, 4})
      for (std::size_t k : {1, 7, 16, 33, 100, 1030})
        for (std::size_t n : {1, 3, 6, 67}) run_and_compare(GetParam(), type, Precision::fast, m, k, n);
}

// Rows longer than the streaming path's block of k (bf16 reorders x a block
// at a time: 8192 / m elements), with a tail that is not a whole chunk.
TEST_P(KernelLinear, FewRowsLongerThanOneBlock) {
  for (WeightType type : {WeightType::f32, WeightType::f16, WeightType::bf16})
    for (std::size_t m : {1, 2, 3, 4})
      for (std::size_t k : {2100, 8221}) run_and_compare(GetParam(), type, Precision::fast, m, k, 21);
}

TEST_P(KernelLinear, ManyRowsRunTheBlockedGemm) {
  for (WeightType type : {WeightType::f32, WeightType::f16, WeightType::bf16})
    for (Precision precision : {Precision::fast, Precision::exact})
      for (std::size_t m : {5, 12, 13, 40})
        for (std::size_t k : {1, 2, 31, 64, 129})
          for (std::size_t n : {1, 17, 33, 70}) run_and_compare(GetParam(), type, precision, m, k, n);
}

// m past the row block (768 on AVX-512, 192 on AVX2), k past the k slice
// (256 to 1024), n past the column chunk (2048): every loop of the GEMM
// driver runs more than once and ends with a partial block. Rows at the block
// edges are checked.
TEST_P(KernelLinear, ShapesCrossingEveryBlock) {
  if (GetParam() == Isa::portable) GTEST_SKIP() << "no blocking to cross";
  for (WeightType type : {WeightType::f32, WeightType::f16, WeightType::bf16})
    for (Precision precision : {Precision::fast, Precision::exact}) {
      if (type != WeightType::bf16 && precision == Precision::exact) continue;  // same path as fast
      run_and_compare(GetParam(), type, precision, 779, 1031, 2085, {0, 191, 192, 767, 768, 778});
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, KernelLinear, ::testing::ValuesIn(allowed_isas()),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

// The bf16 fast path computes exactly what it promises (x rounded to bf16,
// then f32 sums: within the f32 bound of that reference), and that is not
// f32: against f32 activations its error is far past the f32 bound, though
// random, so over many outputs it stays a small fraction of S.
// Precision::exact on the same CPU keeps x in f32.
TEST(KernelLinearBf16, FastRoundsOnlyTheActivations) {
  if (!isa_allowed(Isa::avx512bf16)) GTEST_SKIP() << "CPU lacks AVX512_BF16 (or NUVEC_KERNEL_ISA caps below it)";
  const std::size_t m = 64, k = 2048, n = 64;
  const Product fast(Isa::avx512bf16, WeightType::bf16, Precision::fast, m, k, n);
  compare(fast, /*round_x=*/true, "avx512bf16 fast against x rounded to bf16");

  // Against f32 activations (not asserted within the f32 bound): the error
  // of rounding x, about 2^-9 |x_p w_p| per product, random in sign.
  double sum_sq_err = 0, sum_sq_scale = 0, worst_ratio = 0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double exact = 0, scale = 0;
      for (std::size_t q = 0; q < k; ++q) {
        const double product = double{fast.x[i * k + q]} * double{fast.w.at(j * k + q)};
        exact += product;
        scale += std::fabs(product);
      }
      const double error = std::fabs(double{fast.y[i * n + j]} - exact);
      worst_ratio = std::max(worst_ratio, error / ((double(k) + 2) * std::ldexp(1.0, -24) * scale));
      sum_sq_err += error * error;
      sum_sq_scale += scale * scale;
    }
  EXPECT_GT(worst_ratio, 1.0) << "no output is outside the f32 bound: the activations were not rounded";
  const double relative_rms = std::sqrt(sum_sq_err / sum_sq_scale);
  EXPECT_LT(relative_rms, std::ldexp(1.0, -12)) << "bf16 rounding errors should mostly cancel";

  const Product exact(Isa::avx512bf16, WeightType::bf16, Precision::exact, m, k, n);
  compare(exact, /*round_x=*/false, "avx512bf16 exact against f32 x");
}

TEST(KernelLinearApi, WorkspaceIsBoundedAndIndependentOfThreads) {
  const int saved = threads();
  for (WeightType type : {WeightType::f32, WeightType::f16, WeightType::bf16}) {
    EXPECT_EQ(linear_workspace_bytes(1, 4096, 4096, type), 0u);
    EXPECT_EQ(linear_workspace_bytes(kStreamingRows, 4096, 4096, type), 0u);
    set_threads(1);
    const std::size_t one = linear_workspace_bytes(512, 2048, 5632, type);
    set_threads(3);
    EXPECT_EQ(linear_workspace_bytes(512, 2048, 5632, type), one);
    EXPECT_LE(linear_workspace_bytes(8192, 8192, 128000, type), std::size_t{8} << 20) << name(type);
  }
  set_threads(saved);
}

TEST(KernelLinearApi, ZeroSizedShapes) {
  std::vector<float> y(6, 1.0f);
  const float x[1] = {1};
  const float w[1] = {1};
  linear(x, 2, 0, w, WeightType::f32, 3, y.data(), nullptr);  // k = 0: y = 0
  for (float v : y) EXPECT_EQ(v, 0.0f);
  // Nothing to do: no buffer is read or written, so none is required.
  EXPECT_NO_THROW(linear(nullptr, 0, 5, nullptr, WeightType::bf16, 3, nullptr, nullptr));
  EXPECT_NO_THROW(linear(nullptr, 3, 5, nullptr, WeightType::bf16, 0, nullptr, nullptr));
}

TEST(KernelLinearApi, RefusesMissingBuffersAndHugeShapes) {
  std::vector<float> x(40 * 8, 1.0f), w(8 * 8, 1.0f), y(40 * 8);
  EXPECT_THROW(linear(x.data(), 1, 8, nullptr, WeightType::f32, 8, y.data(), nullptr), InvalidArgument);
  if (linear_workspace_bytes(40, 8, 8, WeightType::f32) != 0) {
    try {
      linear(x.data(), 40, 8, w.data(), WeightType::f32, 8, y.data(), nullptr);
      ADD_FAILURE() << "no workspace was given";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("workspace"), std::string::npos) << e.what();
    }
  } else {  // the portable loops (NUVEC_KERNEL_ISA=portable) need none
    EXPECT_NO_THROW(linear(x.data(), 40, 8, w.data(), WeightType::f32, 8, y.data(), nullptr));
  }
  const std::size_t huge = std::size_t{1} << 40;
  EXPECT_THROW(linear_workspace_bytes(huge, huge, 8, WeightType::f32), InvalidArgument);
  EXPECT_THROW(linear(x.data(), huge, huge, w.data(), WeightType::f32, 8, y.data(), nullptr), InvalidArgument);
}

// The instruction sets detected are those Linux reports for this CPU (its
// flags omit what the OS does not enable), and linear() uses the best one
// unless NUVEC_KERNEL_ISA lowers it; the kernels may use every level up to
// the one linear() uses, and none past it.
TEST(KernelLinearApi, DetectsWhatTheCpuReportsAndUsesTheBest) {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(cpuinfo, line) && flags.empty()) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string flag; words >> flag;) flags.insert(flag);
  }
  if (flags.empty()) GTEST_SKIP() << "no flags in /proc/cpuinfo";
  const auto has = [&](std::initializer_list<const char*> names) {
    for (const char* f : names)
      if (!flags.contains(f)) return false;
    return true;
  };
  const bool avx2 = has({"avx2", "fma", "f16c"});
  const bool avx512 = avx2 && has({"avx512f", "avx512bw", "avx512vl", "avx512dq"});
  const bool avx512bf16 = avx512 && has({"avx512_bf16"});
  // AMX also needs the kernel's permission (arch_prctl), which may be refused.
  const bool amx_flags = avx512bf16 && has({"amx_tile", "amx_bf16"});
  EXPECT_TRUE(isa_supported(Isa::portable));
  EXPECT_EQ(isa_supported(Isa::avx2), avx2);
  EXPECT_EQ(isa_supported(Isa::avx512), avx512);
  EXPECT_EQ(isa_supported(Isa::avx512bf16), avx512bf16);
  if (!amx_flags) {
    EXPECT_FALSE(isa_supported(Isa::amx));
  }
  if (std::getenv("NUVEC_KERNEL_ISA") == nullptr) {
    const Isa best = isa_supported(Isa::amx) ? Isa::amx
                     : avx512bf16           ? Isa::avx512bf16
                     : avx512               ? Isa::avx512
                     : avx2                 ? Isa::avx2
                                            : Isa::portable;
    EXPECT_EQ(best_isa(), best);
  }
#endif
  EXPECT_TRUE(isa_supported(best_isa()));
  EXPECT_STREQ(linear_isa(), isa_name(best_isa()));
  EXPECT_TRUE(isa_allowed(best_isa()));
  if (best_isa() != Isa::amx) {
    EXPECT_FALSE(isa_allowed(static_cast<Isa>(static_cast<int>(best_isa()) + 1)));
  }
  // A cap the CPU can meet is the level used (scripts/test.sh's capped runs).
  if (const char* asked = std::getenv("NUVEC_KERNEL_ISA"); asked != nullptr) {
    for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512, Isa::avx512bf16, Isa::amx}) {
      if (std::strcmp(asked, isa_name(isa)) == 0 && isa_supported(isa)) {
        EXPECT_EQ(best_isa(), isa) << asked;
      }
    }
  }
}

// The public entry point gives the same numbers with any thread count.
TEST(KernelLinearApi, ResultsDoNotDependOnTheThreadCount) {
  const int saved = threads();
  std::mt19937 rng(7);
  const std::size_t m = 37, k = 300, n = 150;
  const ReadOnlyWeights w(WeightType::bf16, n, k, rng);
  const std::vector<float> x = random_x(m * k, rng);
  std::vector<std::vector<float>> results;
  for (int t : {1, 2, 3}) {
    set_threads(t);
    for (std::size_t rows : {std::size_t{1}, m}) {
      std::vector<float> y(rows * n, std::nanf(""));  // unwritten outputs compare unequal
      Workspace ws(linear_workspace_bytes(rows, k, n, WeightType::bf16));
      linear(x.data(), rows, k, w.data(), WeightType::bf16, n, y.data(), ws.ptr);
      results.push_back(y);
    }
  }
  set_threads(saved);
  for (std::size_t r = 2; r < results.size(); ++r) EXPECT_EQ(results[r], results[r % 2]) << r;
}

}  // namespace
}  // namespace nuvec::lm::kernels
