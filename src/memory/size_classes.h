// SizeClasses: the sizes blocks come in — multiples of `small_step` up to
// one `page`, whole pages beyond. The CPU uses 256 bytes and the system
// page; another backend may choose other steps.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>

namespace nuvec::detail {

struct SizeClasses {
  std::size_t small_step = 256;  // a power of two
  std::size_t page = 4096;       // a power of two, a multiple of small_step

  // The class `len` bytes are counted at (0 for 0); empty on overflow.
  std::optional<std::size_t> round(std::size_t len) const {
    const std::size_t step = len <= page ? small_step : page;
    if (len > std::numeric_limits<std::size_t>::max() - (step - 1)) return std::nullopt;
    return (len + step - 1) & ~(step - 1);
  }
  // A dense index for a class size: 0 for small_step, counting up.
  std::size_t index(std::size_t size) const {
    return size <= page ? size / small_step - 1 : page / small_step - 1 + (size / page - 1);
  }
  // The class after `size`.
  std::size_t next(std::size_t size) const { return size + (size < page ? small_step : page); }
};

}  // namespace nuvec::detail
