// Small helpers shared by the tests: sizes and message checks.
#pragma once

#include <cstddef>
#include <string>

namespace nuvec_test {

inline constexpr std::size_t kKiB = std::size_t{1} << 10;
inline constexpr std::size_t kMiB = std::size_t{1} << 20;

// Whether an error message (or any text) contains `needle`.
inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace nuvec_test
