// quant_linear(): checks the call, then runs it on the best instruction set
// this CPU has.
#include "lm/kernels/quant_linear.h"

#include <limits>
#include <string>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/quant_dot.h"
#include "lm/kernels/quant_kernels.h"
#include "lm/kernels/quant_paths.h"
#include "nuvec/error.h"

namespace nuvec::lm::kernels {
namespace {

struct Format {
  std::size_t elements, bytes;
};
constexpr Format kFormats[] = {{32, 34}, {32, 18}, {32, 20}, {32, 22}, {32, 24},
                               {256, 84}, {256, 110}, {256, 144}, {256, 176}, {256, 210},
                               {64, 32}, {64, 64}};  // affine4 / affine8: per 64 values

}  // namespace

std::size_t quant_block_elements(QuantType type) { return kFormats[static_cast<std::size_t>(type)].elements; }
std::size_t quant_block_bytes(QuantType type) { return kFormats[static_cast<std::size_t>(type)].bytes; }

namespace detail {

void quant_linear_with(Isa isa, const QuantCall& call) {
  require_isa(isa, "quant_linear_with");
  switch (isa) {
    case Isa::portable: return quant_linear_portable(call);
    case Isa::avx2: return quant_linear_avx2(call);
    case Isa::avx512:
    case Isa::avx512bf16:
    case Isa::amx: return quant_linear_avx512(call);
  }
}

}  // namespace detail

std::size_t quant_linear_workspace_bytes(std::size_t m, std::size_t k) {
  if (m == 0 || !detail::quant_dot_supported() || !detail::quant_dot_fits(k)) return 0;
  return detail::quant_dot_layout(k, m).bytes;
}

namespace {

void check_shape(const char* what, std::size_t m, std::size_t k, std::size_t n, QuantType type) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max() / 8;
  const auto fits = [](std::size_t a, std::size_t b) { return a == 0 || b <= kMax / a; };
  if (!fits(m, k) || !fits(n, k) || !fits(m, n)) {
    throw InvalidArgument(std::string(what) + ": shape m=" + std::to_string(m) + " k=" + std::to_string(k) +
                          " n=" + std::to_string(n) + " has more elements than memory can hold");
  }
  if (k % quant_block_elements(type) != 0) {
    throw InvalidArgument(std::string(what) + ": rows of " + std::to_string(k) + " weights are not whole blocks of " +
                          std::to_string(quant_block_elements(type)));
  }
}

void run(const detail::QuantCall& call, void* workspace) {
  if (workspace != nullptr && quant_linear_workspace_bytes(call.m, call.k) != 0) {
    return detail::quant_dot_avx512vnni(call, workspace);
  }
  detail::quant_linear_with(best_isa(), call);
}

bool is_affine(QuantType type) { return type == QuantType::affine4 || type == QuantType::affine8; }

}  // namespace

void quant_linear(const float* x, std::size_t m, std::size_t k, const void* w, QuantType type, std::size_t n,
                  float* y, void* workspace) {
  if (is_affine(type)) throw InvalidArgument("quant_linear: MLX affine weights need their scales: quant_linear_affine");
  check_shape("quant_linear", m, k, n, type);
  if (m == 0 || n == 0) return;
  if (x == nullptr || w == nullptr || y == nullptr) throw InvalidArgument("quant_linear: x, w and y must not be null");
  run({x, m, k, w, type, n, y}, workspace);
}

void quant_linear_affine(const float* x, std::size_t m, std::size_t k, const void* w, QuantType type,
                         const AffineScales& scales, std::size_t n, float* y, void* workspace) {
  if (!is_affine(type)) throw InvalidArgument("quant_linear_affine: the type must be affine4 or affine8");
  if (scales.group != 32 && scales.group != 64 && scales.group != 128) {
    throw InvalidArgument("quant_linear_affine: group size " + std::to_string(scales.group) +
                          " is not one MLX quantizes with (32, 64 or 128)");
  }
  check_shape("quant_linear_affine", m, k, n, type);
  if (k % scales.group != 0) {
    throw InvalidArgument("quant_linear_affine: rows of " + std::to_string(k) + " weights are not whole groups of " +
                          std::to_string(scales.group));
  }
  if (m == 0 || n == 0) return;
  if (x == nullptr || w == nullptr || y == nullptr || scales.scales == nullptr || scales.biases == nullptr) {
    throw InvalidArgument("quant_linear_affine: x, w, y, scales and biases must not be null");
  }
  detail::QuantCall call{x, m, k, w, type, n, y};
  call.affine = scales;
  run(call, workspace);
}

}  // namespace nuvec::lm::kernels
