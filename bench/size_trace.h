// The request sizes the allocation benchmarks replay: the same trace for every
// allocator, so that their timings can be compared side by side.
#pragma once

#include <cstddef>
#include <vector>

namespace nuvec::bench {

// Number of sizes in the trace (a power of two, a multiple of kWindow).
inline constexpr std::size_t kTraceLength = 4096;
inline constexpr std::size_t kMinSize = 256;
inline constexpr std::size_t kMaxSize = std::size_t{16} << 20;
// Buffers each benchmark thread keeps live: every step frees the oldest and
// allocates the next size of the trace in its place.
inline constexpr std::size_t kWindow = 16;

// kTraceLength sizes drawn log-uniformly from [kMinSize, kMaxSize] with a fixed
// seed: the same on every run and every machine (mt19937_64 is specified by the
// standard; the distribution is computed here, not by <random>).
const std::vector<std::size_t>& size_trace();

}  // namespace nuvec::bench
