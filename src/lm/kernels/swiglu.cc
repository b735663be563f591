#include "lm/kernels/swiglu.h"

#include <algorithm>
#include <cmath>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/swiglu_loops.h"
#include "lm/kernels/thread_pool.h"

namespace nuvec::lm::kernels {
namespace {

using Loop = void (*)(float*, const float*, std::size_t);

// The loop of `isa`, which the caller has checked.
Loop loop_of(Isa isa) {
  if (static_cast<int>(isa) >= static_cast<int>(Isa::avx512)) return detail::swiglu_avx512;
  if (isa == Isa::avx2) return detail::swiglu_avx2;
  return detail::swiglu_portable;
}

}  // namespace

void detail::swiglu_portable(float* gate, const float* up, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void detail::swiglu_with(Isa isa, float* gate, const float* up, std::size_t count) {
  require_isa(isa, "swiglu_with");
  loop_of(isa)(gate, up, count);
}

void swiglu(float* gate, const float* up, std::size_t count) {
  const Loop run = loop_of(best_isa());
  constexpr std::size_t kBlock = 1 << 15;
  if (count <= kBlock) return run(gate, up, count);
  parallel_for((count + kBlock - 1) / kBlock, [&](std::size_t b) {
    const std::size_t begin = b * kBlock;
    run(gate + begin, up + begin, std::min(kBlock, count - begin));
  });
}

}  // namespace nuvec::lm::kernels
