// The length prefix, nuvec's padding tensors and alignment: the layout facts
// that the parser, the loader and the writer share.
#include "io/safetensors/header_format.h"

#include <algorithm>

#include <fmt/format.h>

#include "nuvec/input_file.h"

namespace nuvec::io {
namespace safetensors_detail {

std::uint64_t checked_header_length(std::span<const std::byte> prefix, std::uint64_t file_size,
                                    const std::filesystem::path& name) {
  if (file_size < kLengthPrefixBytes) {
    format_error(name, 0,
                 fmt::format("the file has {} bytes: too short for a safetensors file, which starts with an "
                             "8-byte header length",
                             file_size));
  }
  if (prefix.size() < kLengthPrefixBytes) {
    format_error(name, prefix.size(), "fewer than the 8 bytes of the header length were given");
  }
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | std::to_integer<std::uint64_t>(prefix[i]);
  if (length > kSafetensorsMaxHeaderLength) {
    format_error(name, 0,
                 fmt::format("header length {} is over the 100 MB limit ({} bytes)", length,
                             kSafetensorsMaxHeaderLength));
  }
  if (length > file_size - kLengthPrefixBytes) {
    format_error(name, 0,
                 fmt::format("header length {} runs past the end of the file ({} bytes)", length, file_size));
  }
  return length;
}

std::string padding_tensor_name(std::uint64_t begin) { return fmt::format("__nuvec_padding_{}__", begin); }

bool is_padding_tensor(const SafetensorsTensorInfo& tensor) {
  // Named for its own offset, so no real tensor is taken for one by accident.
  return tensor.dtype == DType::U8 && tensor.shape.size() == 1 && tensor.byte_size() > 0 &&
         tensor.byte_size() < kSafetensorsAlignment && tensor.name == padding_tensor_name(tensor.begin);
}

}  // namespace safetensors_detail

bool SafetensorsHeader::tensor_aligned(const SafetensorsTensorInfo& tensor) const {
  return tensor.byte_size() == 0 || (data_start + tensor.begin) % dtype_size(tensor.dtype) == 0;
}

bool SafetensorsHeader::aligned() const {
  return std::all_of(tensors.begin(), tensors.end(), [&](const auto& t) { return tensor_aligned(t); });
}

}  // namespace nuvec::io
