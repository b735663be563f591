// The layout nuvec writes: the header padded with spaces so that the data
// starts at a 256-byte boundary of the file, each tensor at a multiple of 256
// bytes from there, and each gap declared as a padding tensor of zeros
// (the reference reader requires the tensors to cover the data exactly).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "nuvec/io/tensor.h"

namespace nuvec::io::safetensors_detail {

struct LayoutTensor {
  std::string name;
  DType dtype = DType::U8;
  std::vector<std::uint64_t> shape;
  std::uint64_t byte_size = 0;
};

struct AlignedLayout {
  std::string prefix;                 // the 8-byte length and the padded JSON: all before the data
  std::vector<std::uint64_t> begins;  // each tensor's offset from the data start
  std::uint64_t data_length = 0;      // padding included; the file is prefix + this
};

// Lays out `tensors` in the given order. InvalidArgument for a duplicate
// name, "__metadata__", a name of nuvec's padding tensors, or text that is
// not UTF-8.
AlignedLayout make_aligned_layout(std::span<const LayoutTensor> tensors,
                                  const std::map<std::string, std::string>& metadata);

}  // namespace nuvec::io::safetensors_detail
