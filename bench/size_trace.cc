#include "size_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

namespace nuvec::bench {

const std::vector<std::size_t>& size_trace() {
  static const std::vector<std::size_t> trace = [] {
    std::mt19937_64 random(0x6e75766563ULL);  // "nuvec"
    const double lo = std::log(static_cast<double>(kMinSize));
    const double hi = std::log(static_cast<double>(kMaxSize));
    std::vector<std::size_t> sizes(kTraceLength);
    for (auto& size : sizes) {
      const double u = static_cast<double>(random() >> 11) * 0x1.0p-53;  // [0, 1)
      const auto s = static_cast<std::size_t>(std::llround(std::exp(lo + u * (hi - lo))));
      size = std::clamp(s, kMinSize, kMaxSize);
    }
    return sizes;
  }();
  return trace;
}

}  // namespace nuvec::bench
