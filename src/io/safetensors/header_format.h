// Facts about the safetensors layout shared by the parser, the loader and
// the writer: the length prefix, the rank cap and nuvec's padding tensors.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "nuvec/io/safetensors.h"

namespace nuvec::io::safetensors_detail {

// The bytes before the JSON: its length, little-endian.
inline constexpr std::uint64_t kLengthPrefixBytes = 8;

// More dimensions than any framework allows (NumPy's limit is 64): a longer
// shape is a hostile header, refused before it costs memory.
inline constexpr std::size_t kMaxRank = 64;

// Decodes the header length from the first 8 bytes of `prefix` and checks it
// against the cap and the file: FormatError at offset 0 if the file is too
// short to hold it, the length is over the cap, or the header would run past
// the end of the file.
std::uint64_t checked_header_length(std::span<const std::byte> prefix, std::uint64_t file_size,
                                    const std::filesystem::path& name);

// save_safetensors declares each gap between tensors as a U8 tensor of zeros
// named for its offset (the reference reader refuses undeclared gaps); the
// parser leaves out exactly these.
std::string padding_tensor_name(std::uint64_t begin);
bool is_padding_tensor(const SafetensorsTensorInfo& tensor);

// Rounds up to a multiple of `alignment` (a power of two); the caller
// ensures it does not overflow.
inline std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace nuvec::io::safetensors_detail
