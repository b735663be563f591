// measure_amx_tile_peak() (machine_roofline.h): the tile unit's bf16 rate
// with nothing but tdpbf16ps in the loop, the ceiling that no product with
// memory operands can pass.
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/machine_roofline.h"
#include "lm/kernels/measurement.h"
#include "lm/kernels/thread_pool.h"
#include "nuvec/error.h"

// The tile instructions are inline assembly, which needs no target pragma;
// they run only where isa_supported(Isa::amx).
#include "lm/kernels/amx_tiles.inc"

namespace nuvec::lm::kernels {
namespace {

using detail::HardwareTiles;

// `rounds` rounds of four products into four independent accumulators (the
// instruction's latency is about four times its issue interval), on tiles
// of small random bf16 values; the sums are stored so the work is kept.
void dot_rounds(std::size_t rounds, const std::uint16_t* operands, float* sums) {
  HardwareTiles::configure();
  HardwareTiles::zero<0>();
  HardwareTiles::zero<1>();
  HardwareTiles::zero<2>();
  HardwareTiles::zero<3>();
  HardwareTiles::load<4>(operands, 64);
  HardwareTiles::load<5>(operands + 512, 64);
  HardwareTiles::load<6>(operands + 1024, 64);
  HardwareTiles::load<7>(operands + 1536, 64);
  for (std::size_t r = 0; r < rounds; ++r) {
    HardwareTiles::dot<0, 4, 6>();
    HardwareTiles::dot<1, 4, 7>();
    HardwareTiles::dot<2, 5, 6>();
    HardwareTiles::dot<3, 5, 7>();
  }
  HardwareTiles::store<0>(sums, 64);
  HardwareTiles::store<1>(sums + 256, 64);
  HardwareTiles::store<2>(sums + 512, 64);
  HardwareTiles::store<3>(sums + 768, 64);
  HardwareTiles::release();
}

}  // namespace

MatmulRate measure_amx_tile_peak(int calls) {
  if (calls < 1) throw InvalidArgument("measure_amx_tile_peak: needs at least one call");
  if (!isa_supported(Isa::amx)) return {0, 16, 32, 16, WeightType::bf16, Precision::fast, calls};
  constexpr std::size_t rounds = 1u << 16;  // 2^18 products of 16 x 32 x 16: ~2 ms a call
  constexpr double flops = 4.0 * rounds * 2 * 16 * 32 * 16;
  const int count = threads();
  std::vector<double> rates(static_cast<std::size_t>(count), 0.0);
  std::atomic<int> arrived{0};
  // As measure_matmul_ceiling: one index per thread, all timed at once.
  parallel_for(static_cast<std::size_t>(count), [&](std::size_t i) {
    alignas(64) std::uint16_t operands[2048];
    alignas(64) float sums[1024];
    std::uint32_t state = 12345u + static_cast<std::uint32_t>(i);
    for (auto& v : operands) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<std::uint16_t>(0x3c00u | (state >> 25));  // about 2^-7, positive
    }
    arrived.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (arrived.load() < count && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    rates[i] = flops / median_seconds(calls, [&] { dot_rounds(rounds, operands, sums); });
  });
  double total = 0;
  for (double r : rates) total += r;
  return {total, 16, 32, 16, WeightType::bf16, Precision::fast, calls};
}

}  // namespace nuvec::lm::kernels
