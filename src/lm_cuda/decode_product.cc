// The decode products' checks (decode_product.h); the kernels are
// decode_product.cu.
#include "lm_cuda/decode_product.h"

#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "lm_cuda/check.h"
#include "lm_cuda/launch.h"
#include "nuvec/error.h"

namespace nuvec::lm::gpu {
namespace {

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Whether the kernels take x and k; InvalidArgument for what no path takes.
bool takes(const void* x, std::size_t k, DType dtype, DType y_dtype, const char* what) {
  element_of(dtype, what);
  if (y_dtype != dtype && y_dtype != DType::f32) {
    throw InvalidArgument(fmt::format("{}: a product of {} is written as {} or f32, not {}", what, dtype_name(dtype),
                                      dtype_name(dtype), dtype_name(y_dtype)));
  }
  if (k == 0) throw InvalidArgument(fmt::format("{}: a product over k = 0 elements", what));
  return k % 8 == 0 && k <= kMaxDecodeProductK && aligned(x);
}

}  // namespace

bool decode_products(const void* x, std::size_t k, std::span<const DecodeProduct> products, DType dtype,
                     DType y_dtype, cudaStream_t stream) {
  const char* what = "gpu::decode_products";
  if (products.empty() || products.size() > static_cast<std::size_t>(kMaxDecodeProducts)) {
    throw InvalidArgument(fmt::format("{}: 1 to {} products a launch, not {}", what, kMaxDecodeProducts,
                                      products.size()));
  }
  if (!takes(x, k, dtype, y_dtype, what)) return false;
  DecodeProductLaunch p{};
  std::size_t rows = 0;
  for (std::size_t i = 0; i < products.size(); ++i) {
    const DecodeProduct& d = products[i];
    if (!aligned(d.w)) return false;
    if (d.bias != nullptr && y_dtype == DType::f32) return false;  // Linear's f32 bias
    rows += d.n;
    require_at_most(rows, static_cast<std::size_t>(std::numeric_limits<int>::max()), "outputs", what);
    p.w[i] = d.w;
    p.bias[i] = d.bias;
    p.y[i] = d.y;
    p.end[i] = static_cast<int>(rows);
  }
  p.count = static_cast<int>(products.size());
  p.k = static_cast<int>(k);
  if (rows == 0) return true;
  launch_decode_products(x, p, y_dtype == DType::f32, element_of(dtype, what), stream);
  return true;
}

bool decode_swiglu_product(const void* x, std::size_t k, const DecodeProduct& gate, const DecodeProduct& up,
                           void* out, DType dtype, cudaStream_t stream) {
  const char* what = "gpu::decode_swiglu_product";
  if (gate.n != up.n) {
    throw InvalidArgument(fmt::format("{}: gate has {} outputs and up {}", what, gate.n, up.n));
  }
  if (!takes(x, k, dtype, dtype, what) || !aligned(gate.w) || !aligned(up.w)) return false;
  require_at_most(gate.n, static_cast<std::size_t>(std::numeric_limits<int>::max()), "outputs", what);
  if (gate.n == 0) return true;
  DecodeProductLaunch p{};
  p.w[0] = gate.w;
  p.bias[0] = gate.bias;
  p.w[1] = up.w;
  p.bias[1] = up.bias;
  p.y[0] = out;
  p.end[0] = static_cast<int>(gate.n);
  p.count = 1;
  p.k = static_cast<int>(k);
  launch_decode_swiglu_product(x, p, element_of(dtype, what), stream);
  return true;
}

}  // namespace nuvec::lm::gpu
