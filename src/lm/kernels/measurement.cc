#include "lm/kernels/measurement.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace nuvec::lm::kernels {

AnonymousMapping::AnonymousMapping(std::size_t bytes) : bytes_(std::max<std::size_t>(bytes, 1)) {
  ptr_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ptr_ == MAP_FAILED) throw std::bad_alloc();
}

AnonymousMapping::~AnonymousMapping() { munmap(ptr_, bytes_); }

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t h = values.size() / 2;
  return values.size() % 2 ? values[h] : (values[h - 1] + values[h]) / 2;
}

}  // namespace nuvec::lm::kernels
