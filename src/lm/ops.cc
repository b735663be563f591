#include "lm/ops.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "lm/kernels/linear.h"
#include "lm/kernels/quant_linear.h"
#include "lm/kernels/swiglu.h"
#include "lm/kernels/thread_pool.h"
#include "nuvec/error.h"

namespace nuvec::lm::ops {
namespace {

float bf16_to_f32(std::uint16_t bits) {
  const std::uint32_t wide = std::uint32_t{bits} << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

kernels::WeightType weight_type(DType dtype) {
  switch (dtype) {
    case DType::f16: return kernels::WeightType::f16;
    case DType::bf16: return kernels::WeightType::bf16;
    default: return kernels::WeightType::f32;
  }
}

// The kernels' name for a quantized dtype (is_quantized(dtype) holds): the
// enums list the block types in the same order.
kernels::QuantType quant_type(DType dtype) {
  return static_cast<kernels::QuantType>(static_cast<int>(dtype) - static_cast<int>(DType::q8_0));
}

kernels::AffineScales affine_scales(const Tensor::Affine& a) {
  return {a.scales.data(), a.biases.data(), a.group_size, a.scales.dtype() == DType::bf16};
}

// Rows of work per parallel index: enough that one index outweighs handing it out.
constexpr std::size_t kRowsPerTask = 16;

template <class F>
void for_row_blocks(std::size_t rows, F&& body) {
  const std::size_t blocks = (rows + kRowsPerTask - 1) / kRowsPerTask;
  if (blocks <= 1) {
    body(std::size_t{0}, rows);
    return;
  }
  kernels::parallel_for(blocks, [&](std::size_t b) {
    body(b * kRowsPerTask, std::min(rows, (b + 1) * kRowsPerTask));
  });
}

}  // namespace

float weight_at(const Tensor& w, std::size_t i) {
  switch (w.dtype()) {
    case DType::f32: return reinterpret_cast<const float*>(w.data())[i];
    case DType::bf16: return bf16_to_f32(reinterpret_cast<const std::uint16_t*>(w.data())[i]);
    case DType::f16: return static_cast<float>(reinterpret_cast<const _Float16*>(w.data())[i]);
    default: break;
  }
  // Norms and biases are never quantized (the loader refuses such files).
  throw InvalidArgument(fmt::format("weight_at on a {} tensor", dtype_name(w.dtype())));
}

void embedding(const Tensor& table, std::span<const std::int32_t> tokens, float* out) {
  const std::size_t vocab = table.dim(0), hidden = table.dim(1);
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    const std::int32_t t = tokens[r];
    if (t < 0 || static_cast<std::size_t>(t) >= vocab) {
      throw InvalidArgument(fmt::format("token id {} (at {}) is outside the vocabulary [0, {})", t, r, vocab));
    }
    const std::size_t base = static_cast<std::size_t>(t) * hidden;
    float* row = out + r * hidden;
    if (const Tensor::Affine* a = table.affine()) {
      kernels::dequantize_affine_row(quant_type(table.dtype()), table.data(), affine_scales(*a), hidden,
                                     static_cast<std::size_t>(t), row);
      continue;
    }
    if (is_quantized(table.dtype())) {
      kernels::dequantize_row(quant_type(table.dtype()), table.data() + storage_bytes(table.dtype(), base), hidden,
                              row);
      continue;
    }
    switch (table.dtype()) {
      default: break;
      case DType::f32: std::memcpy(row, reinterpret_cast<const float*>(table.data()) + base, hidden * 4); break;
      case DType::bf16: {
        const auto* src = reinterpret_cast<const std::uint16_t*>(table.data()) + base;
        for (std::size_t i = 0; i < hidden; ++i) row[i] = bf16_to_f32(src[i]);
        break;
      }
      case DType::f16: {
        const auto* src = reinterpret_cast<const _Float16*>(table.data()) + base;
        for (std::size_t i = 0; i < hidden; ++i) row[i] = static_cast<float>(src[i]);
        break;
      }
    }
  }
}

void rms_norm(const float* x, std::size_t rows, std::size_t dim, const Tensor& weight, double eps, float* out) {
  for_row_blocks(rows, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const float* xr = x + r * dim;
      float* yr = out + r * dim;
      // transformers squares and averages in float32; a double sum only
      // rounds less, well inside the comparison's tolerance.
      double sum = 0;
      for (std::size_t i = 0; i < dim; ++i) sum += double{xr[i]} * xr[i];
      const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(dim) + eps));
      for (std::size_t i = 0; i < dim; ++i) yr[i] = weight_at(weight, i) * (xr[i] * inv);
    }
  });
}

void add_bias(float* y, std::size_t rows, std::size_t n, const Tensor& bias) {
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < n; ++i) y[r * n + i] += weight_at(bias, i);
  }
}

void add(float* x, const float* y, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) x[i] += y[i];
}

void swiglu(float* gate, const float* up, std::size_t count) { kernels::swiglu(gate, up, count); }

void linear(const float* x, std::size_t m, const Tensor& w, const Tensor& bias, float* y, void* workspace,
            bool exact) {
  const std::size_t n = w.dim(0), k = w.dim(1);
  if (const Tensor::Affine* a = w.affine()) {
    kernels::quant_linear_affine(x, m, k, w.data(), quant_type(w.dtype()), affine_scales(*a), n, y,
                                 exact ? nullptr : workspace);
    if (bias.defined()) add_bias(y, m, n, bias);
    return;
  }
  if (is_quantized(w.dtype())) {
    // `exact` keeps the activations f32 (no int8 rounding).
    kernels::quant_linear(x, m, k, w.data(), quant_type(w.dtype()), n, y, exact ? nullptr : workspace);
    if (bias.defined()) add_bias(y, m, n, bias);
    return;
  }
  kernels::linear(x, m, k, w.data(), weight_type(w.dtype()), n, y, workspace,
                  exact ? kernels::Precision::exact : kernels::Precision::fast);
  if (bias.defined()) add_bias(y, m, n, bias);
}

std::size_t linear_workspace_bytes(std::size_t m, const Tensor& w) {
  if (is_quantized(w.dtype())) return kernels::quant_linear_workspace_bytes(m, w.dim(1));
  return kernels::linear_workspace_bytes(m, w.dim(1), w.dim(0), weight_type(w.dtype()));
}

}  // namespace nuvec::lm::ops
