// linear() on a chosen path, behind linear() (for linear.cc, the tests and
// the benchmarks; not for the model code): each entry point here checks that
// the path may run (cpu_isa.h's isa_allowed) before it runs it. The paths
// themselves, unchecked, are linear_paths.h's.
#pragma once

#include <cstddef>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/linear.h"
#include "lm/kernels/linear_workspace.h"

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

// linear() on `isa` (its workspace: linear_workspace.h's workspace_with).
// InvalidArgument where !isa_allowed(isa).
void linear_with(Isa isa, const LinearCall& call);

// The AMX path with the tile instructions done in software
// (linear_amx_software): any CPU with AVX512_BF16 checks the packing and
// blocking where the tile unit is absent. Its workspace is
// workspace_amx()'s. InvalidArgument where AVX512_BF16 is not allowed.
void linear_on_software_tiles(const LinearCall& call);

// The straightforward loops every kernel is tested against: one f32 sum per
// output, in order over p (the weights widened to f32 exactly).
void linear_reference(const float* x, std::size_t m, std::size_t k, const void* w, WeightType type,
                      std::size_t n, float* y);

}  // namespace nuvec::lm::kernels::detail
