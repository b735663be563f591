// splitmix64: a fixed, portable pseudo-random sequence for a seed (unlike
// std:: distributions, whose output the standard leaves to each library).
// The demo model's weights, the sampler's draws and `nuvec run`'s synthetic
// prompt all come from it, so they are the same bytes on every machine
// (tests/lm/torch_reference_test.py mirrors the prompt's).
#pragma once

#include <cstdint>

namespace nuvec::lm {

// Advances `state` and returns the next output.
inline std::uint64_t splitmix64_next(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace nuvec::lm
