// measure_amx_tile_peak() (machine_roofline.h): the tile unit's bf16 rate
// with nothing but tdpbf16ps in the loop, the ceiling that no product with
// memory operands can pass.
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/machine_roofline.h"
#include "lm/kernels/measurement.h"
#include "lm/kernels/thread_pool.h"
#include "nuvec/error.h"

// The tile instructions are inline assembly, which needs no target pragma;
// they run only where isa_allowed(Isa::amx).
#include "lm/kernels/amx_tiles.inc"

namespace nuvec::lm::kernels {
namespace {

using detail::HardwareTiles;

// The four accumulator tiles (a 2 x 2 block of 16 x 16 f32) into `sums`,
// then the tile state given back.
void store_sums_and_release(float* sums) {
  HardwareTiles::store<0>(sums, 64);
  HardwareTiles::store<1>(sums + 256, 64);
  HardwareTiles::store<2>(sums + 512, 64);
  HardwareTiles::store<3>(sums + 768, 64);
  HardwareTiles::release();
}

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
  store_sums_and_release(sums);
}

// One thread's walk for measure_amx_tile_load_rate: `steps` steps of two A
// and two B tile loads and four products, the tiles as the pattern says.
template <int kPrefetch>
void load_rounds(std::size_t steps, const TileLoadPattern& p, const char* a, const char* b, float* sums) {
  const std::size_t tiles = p.region_bytes / 1024;          // per region
  const std::size_t row = p.region_bytes / 32;              // strided A: bytes per row
  const std::size_t per_row = row / 64;                     // strided A: steps across a row
  const auto a_tile = [&](std::size_t s, std::size_t half) {
    return p.strided_a ? a + half * 16 * row + (s % per_row) * 64 : a + ((2 * s + half) % tiles) * 1024;
  };
  const auto b_tile = [&](std::size_t s, std::size_t half) { return b + ((2 * s + half) % tiles) * 1024; };
  const std::size_t a_stride = p.strided_a ? row : 64;
  HardwareTiles::configure();
  HardwareTiles::zero<0>();
  HardwareTiles::zero<1>();
  HardwareTiles::zero<2>();
  HardwareTiles::zero<3>();
  for (std::size_t s = 0; s < steps; ++s) {
    if constexpr (kPrefetch >= 1) {
      for (std::size_t half = 0; half < 2; ++half)
        for (int line = 0; line < 16; ++line) _mm_prefetch(b_tile(s + 2, half) + 64 * line, _MM_HINT_T0);
    }
    if constexpr (kPrefetch >= 2) {
      for (std::size_t half = 0; half < 2; ++half)
        for (int line = 0; line < 16; ++line) _mm_prefetch(a_tile(s + 2, half) + a_stride * line, _MM_HINT_T0);
    }
    HardwareTiles::load<4>(a_tile(s, 0), a_stride);
    HardwareTiles::load<5>(a_tile(s, 1), a_stride);
    HardwareTiles::load<6>(b_tile(s, 0), 64);
    HardwareTiles::dot<0, 4, 6>();
    HardwareTiles::load<7>(b_tile(s, 1), 64);
    HardwareTiles::dot<1, 4, 7>();
    HardwareTiles::dot<2, 5, 6>();
    HardwareTiles::dot<3, 5, 7>();
  }
  store_sums_and_release(sums);
}

// Every pool thread runs `run(thread index)` `calls` times at once (after
// waiting, at most a second, for the others to arrive); the sum of their
// median rates, `flops` a call.
template <class Setup>
double all_threads_rate(int calls, double flops, Setup&& setup) {
  const int count = threads();
  std::vector<double> rates(static_cast<std::size_t>(count), 0.0);
  std::atomic<int> arrived{0};
  parallel_for(static_cast<std::size_t>(count), [&](std::size_t i) {
    auto run = setup(i);
    arrived.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (arrived.load() < count && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    rates[i] = flops / median_seconds(calls, run);
  });
  double total = 0;
  for (double r : rates) total += r;
  return total;
}

}  // namespace

double measure_amx_tile_load_rate(TileLoadPattern pattern, int calls) {
  if (calls < 1) throw InvalidArgument("measure_amx_tile_load_rate: needs at least one call");
  if (pattern.region_bytes < 4096 || pattern.region_bytes % 4096 != 0)
    throw InvalidArgument("measure_amx_tile_load_rate: a region is a multiple of 4 KiB, got " +
                          std::to_string(pattern.region_bytes) + " bytes");
  if (!isa_allowed(Isa::amx)) return 0;
  constexpr std::size_t steps = 1u << 14;
  constexpr double flops = 4.0 * steps * 2 * 16 * 32 * 16;
  return all_threads_rate(calls, flops, [&](std::size_t i) {
    // Small positive bf16 values (about 2^-7), so the sums stay normal.
    auto buffer = std::make_shared<std::vector<std::uint16_t>>(pattern.region_bytes + 32);  // 2 regions + 64 B
    std::uint32_t state = 777u + static_cast<std::uint32_t>(i);
    for (auto& v : *buffer) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<std::uint16_t>(0x3c00u | (state >> 25));
    }
    const char* base = reinterpret_cast<const char*>(
        (reinterpret_cast<std::uintptr_t>(buffer->data()) + 63) / 64 * 64);
    const char* a = base;
    const char* b = base + pattern.region_bytes;
    return [buffer, a, b, pattern] {
      alignas(64) float sums[1024];
      if (pattern.prefetch <= 0) load_rounds<0>(steps, pattern, a, b, sums);
      else if (pattern.prefetch == 1) load_rounds<1>(steps, pattern, a, b, sums);
      else load_rounds<2>(steps, pattern, a, b, sums);
    };
  });
}

MatmulRate measure_amx_tile_peak(int calls) {
  if (calls < 1) throw InvalidArgument("measure_amx_tile_peak: needs at least one call");
  if (!isa_allowed(Isa::amx)) return {0, 16, 32, 16, WeightType::bf16, Precision::fast, calls};
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
