// Converting big-endian array data to native order, in place.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

#include "nuvec/io/tensor.h"

namespace nuvec::io {

// The width of one byte-swapped unit of `dtype`: its element size, except
// complex64, whose real and imaginary halves are two float32s swapped apart.
inline std::size_t swap_width(DType dtype) { return dtype == DType::C64 ? 4 : dtype_size(dtype); }

// Reverses the bytes of each `width`-byte unit of `data` (a whole number of them).
inline void reverse_each(std::span<std::byte> data, std::size_t width) {
  if (width < 2) return;
  for (std::size_t i = 0; i + width <= data.size(); i += width) {
    std::reverse(data.begin() + static_cast<std::ptrdiff_t>(i), data.begin() + static_cast<std::ptrdiff_t>(i + width));
  }
}

}  // namespace nuvec::io
