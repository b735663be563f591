// libFuzzer target: parse_npy_header on arbitrary bytes. A FormatError is the
// expected refusal; a crash, a sanitizer report, any other exception, or an
// accepted header that breaks its own invariants is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "nuvec/error.h"
#include "nuvec/io/npy.h"

namespace {

void check_accepted(const nuvec::io::NpyHeader& h, std::uint64_t file_size) {
  std::uint64_t bytes = nuvec::io::dtype_size(h.dtype);
  for (std::uint64_t d : h.shape) bytes *= d;  // the parser proved this cannot overflow
  if (h.data_offset + h.data_bytes != file_size || bytes != h.data_bytes || h.data_offset > file_size) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    check_accepted(nuvec::io::parse_npy_header(bytes, size, "fuzz.npy"), size);
  } catch (const nuvec::FormatError&) {
  }
  // The same bytes as the start of a much longer file: the header's own
  // checks run without the data's end to stop them first.
  const std::uint64_t long_file = std::uint64_t{size} + (std::uint64_t{1} << 40);
  try {
    const auto header = nuvec::io::parse_npy_header(bytes, long_file, "fuzz.npy");
    check_accepted(header, long_file);
  } catch (const nuvec::FormatError&) {
  } catch (const nuvec::InvalidArgument&) {  // the header runs past these bytes
  }
  return 0;
}
