// libFuzzer target: parse_gguf on arbitrary bytes. A FormatError is the
// expected refusal; a crash, a sanitizer report, any other exception, or an
// accepted header that breaks its own invariants is a finding.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "nuvec/error.h"
#include "nuvec/io/gguf.h"

namespace {

// What parse_gguf promises of a file it accepts.
void check_accepted(const nuvec::io::GgufFile& f, std::uint64_t file_size) {
  if (!std::has_single_bit(f.alignment) || f.data_offset % f.alignment != 0) std::abort();
  for (const auto& t : f.tensors) {
    if (t.dims.size() > 4 || t.offset % f.alignment != 0) std::abort();
    if (t.bytes != 0 && (f.data_offset > file_size || t.offset > file_size - f.data_offset ||
                         t.bytes > file_size - f.data_offset - t.offset)) {
      std::abort();
    }
    if (!t.dims.empty() && t.dims[0] % t.type.block_size != 0) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    check_accepted(nuvec::io::parse_gguf(bytes, size, "fuzz.gguf"), size);
  } catch (const nuvec::FormatError&) {
  }
  // The same bytes as the start of a much longer file: counts and lengths
  // then pass the file-size check and meet the header cap and the bytes at hand.
  const std::uint64_t long_file = std::uint64_t{size} + (std::uint64_t{1} << 40);
  try {
    check_accepted(nuvec::io::parse_gguf(bytes, long_file, "fuzz.gguf"), long_file);
  } catch (const nuvec::FormatError&) {
  } catch (const nuvec::InvalidArgument&) {  // the header runs past these bytes
  }
  return 0;
}
