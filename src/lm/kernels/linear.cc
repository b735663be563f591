// linear(): checks the call, then runs it on the best instruction set this
// CPU has (cpu_isa.h), chosen once; and the checked entry points of
// linear_kernels.h.
#include "lm/kernels/linear.h"

#include <cstring>
#include <limits>
#include <string>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/linear_kernels.h"
#include "lm/kernels/linear_paths.h"
#include "nuvec/error.h"

namespace nuvec::lm::kernels {
namespace detail {

void linear_with(Isa isa, const LinearCall& call) {
  require_isa(isa, "linear_with");
  switch (isa) {
    case Isa::portable: return linear_portable(call);
    case Isa::avx2: return linear_avx2(call);
    case Isa::avx512: return linear_avx512(call);
    case Isa::avx512bf16: return linear_avx512bf16(call);
    case Isa::amx: return linear_amx(call);
  }
}

void linear_on_software_tiles(const LinearCall& call) {
  require_isa(Isa::avx512bf16, "linear_on_software_tiles");
  linear_amx_software(call);
}

}  // namespace detail

namespace {

// The kernels index with size_t products such as i * k and j * k; refuse
// shapes whose element counts do not fit, rather than wrap.
void check_shape(std::size_t m, std::size_t k, std::size_t n) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max() / 8;
  const auto fits = [](std::size_t a, std::size_t b) { return a == 0 || b <= kMax / a; };
  if (!fits(m, k) || !fits(n, k) || !fits(m, n))
    throw InvalidArgument("linear: shape m=" + std::to_string(m) + " k=" + std::to_string(k) +
                          " n=" + std::to_string(n) + " has more elements than memory can hold");
}

}  // namespace

void linear(const float* x, std::size_t m, std::size_t k, const void* w, WeightType type, std::size_t n, float* y,
            void* workspace, Precision precision) {
  check_shape(m, k, n);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::memset(y, 0, m * n * sizeof(float));
    return;
  }
  if (x == nullptr || w == nullptr || y == nullptr)
    throw InvalidArgument("linear: x, w and y must not be null for a " + std::to_string(m) + "x" + std::to_string(k) +
                          " by " + std::to_string(n) + "x" + std::to_string(k) + " product");
  const Isa isa = best_isa();
  if (workspace == nullptr && detail::workspace_with(isa, m, k, n, type) != 0)
    throw InvalidArgument("linear: this shape needs linear_workspace_bytes() = " +
                          std::to_string(detail::workspace_with(isa, m, k, n, type)) +
                          " bytes of workspace, and none was given");
  detail::linear_with(isa, {x, m, k, w, type, n, y, workspace, precision});
}

std::size_t linear_workspace_bytes(std::size_t m, std::size_t k, std::size_t n, WeightType type) {
  check_shape(m, k, n);
  if (m == 0 || n == 0 || k == 0) return 0;
  return detail::workspace_with(best_isa(), m, k, n, type);
}

const char* linear_isa() { return isa_name(best_isa()); }

}  // namespace nuvec::lm::kernels
