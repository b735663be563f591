// The statistic every benchmark reports: the median of repeated runs
// (timings here are noisy; medians and ratios, side by side, are what we cite).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace nuvec_bench {

// The middle value (the mean of the two middle ones for an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace nuvec_bench
