// What in-process measurements share (machine_roofline.cc and
// bench/lm/roofline.cc): buffers mapped outside nuvec's allocator, so that
// measuring neither shows in nor disturbs a device's statistics, and the
// median of repeated timings.
#pragma once

#include <chrono>
#include <cstddef>
#include <utility>
#include <vector>

namespace nuvec::lm::kernels {

// A private anonymous mapping (read-write, zero-filled, pages faulted in when
// first touched), unmapped on destruction. A zero-byte request maps a page
// all the same, so that an empty workspace is still a valid pointer. Throws
// std::bad_alloc when the mapping fails.
class AnonymousMapping {
 public:
  explicit AnonymousMapping(std::size_t bytes);
  ~AnonymousMapping();
  AnonymousMapping(const AnonymousMapping&) = delete;
  AnonymousMapping& operator=(const AnonymousMapping&) = delete;

  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  std::size_t bytes_;
  void* ptr_;
};

// The median of `values` (the mean of the middle two for an even count); 0
// for none.
double median(std::vector<double> values);

// Calls `run` once untimed (to warm caches and fault pages in), then `timed`
// times; the median of the timed calls' wall-clock seconds.
template <class F>
double median_seconds(int timed, F&& run) {
  run();
  std::vector<double> seconds;
  for (int i = 0; i < timed; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median(std::move(seconds));
}

}  // namespace nuvec::lm::kernels
