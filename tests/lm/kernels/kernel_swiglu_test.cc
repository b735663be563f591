// swiglu (src/lm/kernels/swiglu.h) on every instruction set this CPU has,
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

using Loop = void (*)(float*, const float*, std::size_t);

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

std::vector<std::pair<const char*, Loop>> loops() {
  std::vector<std::pair<const char*, Loop>> all = {{"portable", detail::swiglu_portable}};
  if (isa_supported(Isa::avx2)) all.push_back({"avx2", detail::swiglu_avx2});
  if (isa_supported(Isa::avx512)) all.push_back({"avx512", detail::swiglu_avx512});
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
  for (auto [name, loop] : loops())
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{17}, gate.size()}) {
      std::vector<float> g(gate.begin(), gate.begin() + count), u(up.begin(), up.begin() + count);
      loop(g.data(), u.data(), count);
      expect_close(g, std::vector<float>(gate.begin(), gate.begin() + count), u, name);
    }
}

TEST(KernelSwiglu, NanStaysNan) {
  for (auto [name, loop] : loops()) {
    std::vector<float> g(20, 1.0f), u(20, 1.0f);
    g[3] = std::nanf("");
    loop(g.data(), u.data(), g.size());
    EXPECT_TRUE(std::isnan(g[3])) << name;
    EXPECT_FALSE(std::isnan(g[4])) << name;
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
