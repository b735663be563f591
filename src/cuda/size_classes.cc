// A CUDA device's size classes: arithmetic only, so it builds without CUDA.
#include "memory/size_classes.h"
#include "nuvec/cuda.h"

namespace nuvec::cuda {

std::optional<std::size_t> allocation_size(std::size_t len) {
  return detail::SizeClasses{kSmallStep, kLargeStep}.round(len);
}

}  // namespace nuvec::cuda
