#include "io/safetensors/header_reader.h"

#include <array>
#include <vector>

#include "io/safetensors/header_format.h"

namespace nuvec::io {
namespace safetensors_detail {

SafetensorsHeader read_header(const InputFile& file) {
  std::array<std::byte, kLengthPrefixBytes> length_bytes{};
  const std::size_t have = static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), kLengthPrefixBytes));
  file.read_exact(0, std::span(length_bytes).first(have), "the header length");
  const std::uint64_t length = checked_header_length(std::span(length_bytes).first(have), file.size(), file.path());
  // `length` is at most 100 MB and inside the file: safe to allocate.
  std::vector<std::byte> prefix(static_cast<std::size_t>(kLengthPrefixBytes + length));
  file.read_exact(0, prefix, "the header");
  return parse_safetensors_header(prefix, file.size(), file.path());
}

}  // namespace safetensors_detail

SafetensorsHeader read_safetensors_header(const std::filesystem::path& path) {
  const InputFile file(path);
  return safetensors_detail::read_header(file);
}

}  // namespace nuvec::io
