// quant_linear() in plain C++ (CPUs without AVX2, and the tests' baseline),
// and the row dequantization behind quantized embedding tables.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "lm/kernels/quant_paths.h"
#include "lm/kernels/thread_pool.h"
#include "nuvec/error.h"

namespace nuvec::lm::kernels::detail {
namespace {

#include "lm/kernels/quant_unpack.inc"

struct Scalar {
  using V = float;
  static constexpr std::size_t W = 1;
  static constexpr int kMaxRows = 4;
  static V zero() { return 0.0f; }
  static V set1(float v) { return v; }
  static V load(const float* p) { return *p; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V add(V a, V b) { return a + b; }
  static float reduce(V v) { return v; }
  static V widen_i8(const std::int8_t* p) { return static_cast<float>(*p); }
};

#include "lm/kernels/quant_simd.inc"

}  // namespace

void quant_linear_portable(const QuantCall& call) { quant_linear_simd<Scalar>(call); }

}  // namespace nuvec::lm::kernels::detail

namespace nuvec::lm::kernels {

void dequantize_row(QuantType type, const void* row, std::size_t k, float* out) {
  if (type == QuantType::affine4 || type == QuantType::affine8) {
    throw InvalidArgument("dequantize_row: MLX affine rows need their scales: dequantize_affine_row");
  }
  detail::with_unpacker(type, [&]<class U>() {
    alignas(64) std::int8_t q[U::kBlock];
    float scale[U::kBlock / 16], offset[U::kBlock / 16];
    const auto* b = static_cast<const std::uint8_t*>(row);
    for (std::size_t blk = 0; blk < k / U::kBlock; ++blk) {
      U::unpack(b + blk * U::kBytes, q, scale, offset);
      for (std::size_t e = 0; e < U::kBlock; ++e) {
        out[blk * U::kBlock + e] = q[e] * scale[e / 16] + offset[e / 16];
      }
    }
  });
}

void dequantize_affine_row(QuantType type, const void* w, const AffineScales& scales, std::size_t k, std::size_t j,
                           float* out) {
  detail::QuantCall call{nullptr, 1, k, w, type, j + 1, out};
  call.affine = scales;
  detail::with_rows(call, [&]<class U>(const U& src) {
    alignas(64) std::int8_t q[U::kBlock];
    float scale[U::kBlock / 16], offset[U::kBlock / 16];
    const auto row = src.row(j);
    for (std::size_t blk = 0; blk < k / U::kBlock; ++blk) {
      U::unpack(row, blk, q, scale, offset);
      for (std::size_t e = 0; e < U::kBlock; ++e) out[blk * U::kBlock + e] = q[e] * scale[e / 16] + offset[e / 16];
    }
  });
}

}  // namespace nuvec::lm::kernels
