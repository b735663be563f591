// swiglu (src/lm/kernels/swiglu.h) on every instruction set this run may
// use (the CPU's, up to NUVEC_KERNEL_ISA),
// against silu computed in double: gates across the whole range the
// vector exp reduces (tiny, ordinary, past where e^-g saturates), tails that
// are not a whole vector, NaN, and the pool's split of a long run.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/swiglu.h"

namespace nuvec::lm::kernels {
namespace {

double silu_times(double g, double u) { return g / (1.0 + std::exp(-g)) * u; }

// Within 4 f32 ulps of the double result, or 1e-35 of it: past g = -87.3
// the vector exp saturates, so silu(g) comes out as about g * 1e-38 where it
// is smaller still (both are zero to any use).
void expect_close(const std::vector<float>& got, const std::vector<float>& gate, const std::vector<float>& up,
                  const char* what) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double want = silu_times(gate[i], up[i]);
    const double tolerance = 4 * std::ldexp(std::fabs(want), -23) + 1e-35;
    ASSERT_NEAR(got[i], want, tolerance) << what << " at " << i << ": gate " << gate[i] << " up " << up[i];
  }
}

// The levels with a loop of their own (avx512bf16 and amx run avx512's).
std::vector<Isa> loops() {
  std::vector<Isa> all;
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512})
    if (isa_allowed(isa)) all.push_back(isa);
  return all;
}

TEST(KernelSwiglu, EveryInstructionSetAcrossTheRange) {
  std::mt19937 rng(5);
  std::vector<float> gate, up;
  for (float g : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-8f, 0.5f, -0.5f, 10.0f, -10.0f, 80.0f, -80.0f, 87.0f, -87.0f,
                  88.5f, -88.5f, 89.0f, -89.0f, 100.0f, -100.0f, 1e10f, -1e10f}) {
    gate.push_back(g);
    up.push_back(1.5f);
  }
  std::uniform_real_distribution<float> wide(-30.0f, 30.0f), unit(-1.0f, 1.0f);
  for (int i = 0; i < 1000; ++i) {
    gate.push_back(wide(rng));
    up.push_back(unit(rng));
  }
  for (Isa isa : loops())
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{17}, gate.size()}) {
      std::vector<float> g(gate.begin(), gate.begin() + count), u(up.begin(), up.begin() + count);
      detail::swiglu_with(isa, g.data(), u.data(), count);
      expect_close(g, std::vector<float>(gate.begin(), gate.begin() + count), u, isa_name(isa));
    }
}

TEST(KernelSwiglu, NanStaysNan) {
  for (Isa isa : loops()) {
    std::vector<float> g(20, 1.0f), u(20, 1.0f);
    g[3] = std::nanf("");
    detail::swiglu_with(isa, g.data(), u.data(), g.size());
    EXPECT_TRUE(std::isnan(g[3])) << isa_name(isa);
    EXPECT_FALSE(std::isnan(g[4])) << isa_name(isa);
  }
}

// The public entry point: a run long enough to be split over the pool.
TEST(KernelSwiglu, LongRunsSplitOverThreads) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  std::vector<float> gate(100003), up(gate.size());
  for (auto& v : gate) v = dist(rng);
  for (auto& v : up) v = dist(rng);
  std::vector<float> y = gate;
  swiglu(y.data(), up.data(), y.size());
  expect_close(y, gate, up, isa_name(best_isa()));
}

}  // namespace
}  // namespace nuvec::lm::kernels
