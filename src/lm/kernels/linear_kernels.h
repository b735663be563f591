// The linear kernels' per-instruction-set entry points, behind linear() (for
// linear.cc, the tests and the benchmarks; not for the model code). Each one
// lives in its own file, compiled for its instruction set with
// `#pragma GCC target`, and must only be called where isa_supported() says so.
#pragma once

#include <cstddef>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/linear.h"

namespace nuvec::lm::kernels::detail {

struct LinearCall {
  const float* x;
  std::size_t m, k;
  const void* w;
  WeightType type;
  std::size_t n;
  float* y;
  void* workspace;
  Precision precision;
};

void linear_portable(const LinearCall& call);
void linear_avx2(const LinearCall& call);
void linear_avx512(const LinearCall& call);
void linear_avx512bf16(const LinearCall& call);
void linear_amx(const LinearCall& call);

std::size_t workspace_avx2(std::size_t m, std::size_t k, std::size_t n, WeightType type);
std::size_t workspace_avx512(std::size_t m, std::size_t k, std::size_t n, WeightType type);
std::size_t workspace_avx512bf16(std::size_t m, std::size_t k, std::size_t n, WeightType type);
std::size_t workspace_amx(std::size_t m, std::size_t k, std::size_t n, WeightType type);

// The AMX path's own parts (linear_amx.cc), for its tests and the roofline:
// the bytes of its packed block of x (at most 4 MiB for k <= 65536, 64 * k
// beyond), and the same computation with the tile instructions done in
// software (any CPU with AVX512_BF16: it checks the packing and blocking
// where the tile unit is absent).
std::size_t amx_x_block_bytes(std::size_t m, std::size_t k);
void linear_amx_software(const LinearCall& call);

// linear() on a chosen instruction set (which the CPU must support).
void linear_with(Isa isa, const LinearCall& call);
std::size_t workspace_with(Isa isa, std::size_t m, std::size_t k, std::size_t n, WeightType type);

// The straightforward loops every kernel is tested against: one f32 sum per
// output, in order over p (the weights widened to f32 exactly).
void linear_reference(const float* x, std::size_t m, std::size_t k, const void* w, WeightType type,
                      std::size_t n, float* y);

}  // namespace nuvec::lm::kernels::detail
