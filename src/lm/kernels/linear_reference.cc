// The straightforward loops: the tests' reference for every kernel, and
// linear() itself on CPUs without AVX2 (the "portable" level).
#include <algorithm>
#include <cstring>

#include "lm/kernels/linear_paths.h"
#include "lm/kernels/thread_pool.h"

namespace nuvec::lm::kernels::detail {
namespace {

float widen(const void* w, WeightType type, std::size_t i) {
  switch (type) {
    case WeightType::f32: return static_cast<const float*>(w)[i];
    case WeightType::bf16: {
      const std::uint32_t bits = std::uint32_t{static_cast<const std::uint16_t*>(w)[i]} << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case WeightType::f16: return static_cast<float>(static_cast<const _Float16*>(w)[i]);
  }
  return 0;
}

}  // namespace

void linear_reference(const float* x, std::size_t m, std::size_t k, const void* w, WeightType type, std::size_t n,
                      float* y) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::size_t p = 0; p < k; ++p) sum += double{x[i * k + p]} * double{widen(w, type, j * k + p)};
      y[i * n + j] = static_cast<float>(sum);
    }
}

// f32 sums in order, rows of W split over the pool; weights are read once
// per row of x, so this is slow for prefill, but it runs anywhere.
void linear_portable(const LinearCall& c) {
  constexpr std::size_t kRows = 16;
  parallel_for((c.n + kRows - 1) / kRows, [&](std::size_t t) {
    const std::size_t j1 = std::min(c.n, (t + 1) * kRows);
    for (std::size_t i = 0; i < c.m; ++i)
      for (std::size_t j = t * kRows; j < j1; ++j) {
        float sum = 0;
        for (std::size_t p = 0; p < c.k; ++p) sum += c.x[i * c.k + p] * widen(c.w, c.type, j * c.k + p);
        c.y[i * c.n + j] = sum;
      }
  });
}

}  // namespace nuvec::lm::kernels::detail
