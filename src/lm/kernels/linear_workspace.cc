// linear()'s workspace sizes (linear_workspace.h). No instruction-set
// target here: this runs on any CPU, before any kernel is chosen.
#include "lm/kernels/linear_workspace.h"

#include <algorithm>

namespace nuvec::lm::kernels::detail {
namespace {

constexpr std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }
constexpr std::size_t round_up(std::size_t a, std::size_t b) { return ceil_div(a, b) * b; }
constexpr std::size_t align64(std::size_t bytes) { return round_up(bytes, 64); }

// The f32 paths (linear_simd.inc's linear_f32_paths): none for streaming,
// the GEMM's otherwise.
std::size_t f32_paths_workspace(const GemmBlocking& b, std::size_t m, std::size_t n) {
  return m <= kStreamingRows ? 0 : gemm_workspace(b, m, n);
}

}  // namespace

std::size_t gemm_a_bytes(const GemmBlocking& b, std::size_t m) {
  return align64(ceil_div(std::min(m, b.mc), b.mr) * b.a_panel_bytes());
}

std::size_t gemm_workspace(const GemmBlocking& b, std::size_t m, std::size_t n) {
  return gemm_a_bytes(b, m) + align64(ceil_div(std::min(n, b.nb), b.nr) * b.b_panel_bytes());
}

std::size_t workspace_avx2(std::size_t m, std::size_t, std::size_t n, WeightType) {
  return f32_paths_workspace(kAvx2F32Gemm, m, n);
}

std::size_t workspace_avx512(std::size_t m, std::size_t, std::size_t n, WeightType) {
  return f32_paths_workspace(kAvx512F32Gemm, m, n);
}

// bf16 weights with many rows take the bf16 GEMM (Precision::fast) or the
// f32 one (Precision::exact), in the same buffer.
std::size_t workspace_avx512bf16(std::size_t m, std::size_t k, std::size_t n, WeightType type) {
  const std::size_t f32 = workspace_avx512(m, k, n, type);
  if (type != WeightType::bf16 || m <= kStreamingRows) return f32;
  return std::max(f32, gemm_workspace(kAvx512Bf16Gemm, m, n));
}

// The packed block of x, or linear_avx512()'s f32 GEMM for Precision::exact
// in the same buffer; other calls are linear_avx512bf16()'s.
std::size_t workspace_amx(std::size_t m, std::size_t k, std::size_t n, WeightType type) {
  if (type != WeightType::bf16 || m <= kStreamingRows) return workspace_avx512bf16(m, k, n, type);
  return std::max(workspace_avx512(m, k, n, type), amx_x_block_bytes(m, k));
}

std::size_t workspace_with(Isa isa, std::size_t m, std::size_t k, std::size_t n, WeightType type) {
  switch (isa) {
    case Isa::portable: return 0;
    case Isa::avx2: return workspace_avx2(m, k, n, type);
    case Isa::avx512: return workspace_avx512(m, k, n, type);
    case Isa::avx512bf16: return workspace_avx512bf16(m, k, n, type);
    case Isa::amx: return workspace_amx(m, k, n, type);
  }
  return 0;
}

std::size_t amx_steps(std::size_t k) { return ceil_div(k, kAmxStep); }

std::size_t amx_x_block_rows(std::size_t m, std::size_t k) {
  const std::size_t per_row = amx_steps(k) * kAmxStep * 2;
  const std::size_t fit = std::max(kAmxBlock, kAmxXBlockBytes / per_row / kAmxBlock * kAmxBlock);
  return std::min(round_up(m, kAmxBlock), fit);
}

std::size_t amx_x_block_bytes(std::size_t m, std::size_t k) {
  return amx_x_block_rows(m, k) * amx_steps(k) * kAmxStep * 2;
}

}  // namespace nuvec::lm::kernels::detail
