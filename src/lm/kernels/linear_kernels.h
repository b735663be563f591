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

// The AMX path's own parts (linear_amx.cc), for its tests and the roofline.
// AmxBlocking: how linear_amx() blocks the product (linear_amx() itself runs
// the defaults); every blocking computes the same numbers, bit for bit.
// - pack_w: copy each chunk of W's outputs (at most 4 MiB, all of k) into
//   contiguous tiles first, instead of loading the tiles from W's rows;
// - prefetch: 0 none, 1 the x tiles two steps ahead into L1, 2 the W tiles too;
// - panel_strips: strips of 32 outputs a task runs against each block of x
//   (0: as many as fit in about 1 MiB, at most 8).
// The workspace (workspace_amx, enough for every blocking): the packed
// block of x (amx_x_block_bytes: at most 4 MiB for k <= 65536, 64 * k
// beyond) and the packed chunk of W (amx_w_chunk_bytes: likewise), never
// anything per thread. linear_amx_software does the same with the tile
// instructions in software (any CPU with AVX512_BF16: it checks the packing
// and blocking where the tile unit is absent).
struct AmxBlocking {
  bool pack_w = true;
  int prefetch = 1;
  std::size_t panel_strips = 0;
};
std::size_t amx_x_block_bytes(std::size_t m, std::size_t k);
std::size_t amx_w_chunk_bytes(std::size_t n, std::size_t k);
void linear_amx_with(const LinearCall& call, AmxBlocking blocking);
void linear_amx_software(const LinearCall& call, AmxBlocking blocking = {});

// linear() on a chosen instruction set (which the CPU must support).
void linear_with(Isa isa, const LinearCall& call);
std::size_t workspace_with(Isa isa, std::size_t m, std::size_t k, std::size_t n, WeightType type);

// The straightforward loops every kernel is tested against: one f32 sum per
// output, in order over p (the weights widened to f32 exactly).
void linear_reference(const float* x, std::size_t m, std::size_t k, const void* w, WeightType type,
                      std::size_t n, float* y);

}  // namespace nuvec::lm::kernels::detail
