// Placeholder implementation: straightforward loops, correct but slow. The
// kernels work replaces this file with the dispatched AVX2/AVX-512 kernels.
#include <cstring>
#include <thread>

#include "lm/kernels/linear.h"

namespace nuvec::lm::kernels {
namespace {

float to_float(const void* w, WeightType type, std::size_t i) {
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

int g_threads = static_cast<int>(std::thread::hardware_concurrency());

}  // namespace

void linear(const float* x, std::size_t m, std::size_t k, const void* w, WeightType type,
            std::size_t n, float* y, void*) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      float sum = 0;
      for (std::size_t p = 0; p < k; ++p) sum += x[i * k + p] * to_float(w, type, j * k + p);
      y[i * n + j] = sum;
    }
}

std::size_t linear_workspace_bytes(std::size_t, std::size_t, std::size_t, WeightType) { return 0; }
void set_threads(int threads) { g_threads = threads > 0 ? threads : 1; }
int threads() { return g_threads; }

}  // namespace nuvec::lm::kernels
