// load_npy: parse the header from a few positioned reads, then map the file
// (native order, aligned data) or read the data into one buffer.
#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "memory/input_file.h"
#include "io/read_ranges.h"
#include "io/npy/byte_order.h"
#include "nuvec/buffer.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/io/npy.h"

namespace nuvec::io {
namespace {

constexpr std::size_t kLongestPreamble = 12;

NpyHeader read_header(const InputFile& file) {
  std::vector<std::byte> prefix(static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), kLongestPreamble)));
  file.read_exact(0, prefix, "npy preamble");
  // Bounded by kNpyMaxHeaderLength and by the file's size.
  const std::uint64_t header_size = npy_header_size(prefix, file.size(), file.path());
  prefix.resize(static_cast<std::size_t>(header_size));
  file.read_exact(0, prefix, "npy header");
  return parse_npy_header(prefix, file.size(), file.path());
}

// Shares the mapping of the whole file; the data is a slice of it.
TensorView map_data(Device& device, const InputFile& file, const NpyHeader& header) {
  file.check_unchanged();
  MappedFile mapped = device.map_file(file.fd(), file.path());
  if (mapped.file_size() != file.size()) {
    // Replaced or resized between parsing and mapping: the header no longer describes it.
    format_error(file.path(), std::min<std::uint64_t>(file.size(), mapped.file_size()),
                 fmt::format("the file changed size while being loaded ({} bytes, now {})", file.size(),
                             mapped.file_size()));
  }
  TensorView view;
  view.bytes = mapped.bytes().subspan(static_cast<std::size_t>(header.data_offset),
                                      static_cast<std::size_t>(header.data_bytes));
  view.storage = mapped.share();
  return view;
}

// One buffer holding the data in native byte order.
TensorView read_data(Device& device, const InputFile& file, const NpyHeader& header, bool native_order) {
  if (!device.host_addressable() && !native_order) {
    throw InvalidArgument(fmt::format(
        "cannot load {} onto {}: its elements are in the other byte order and must be swapped on the host; load it "
        "on the CPU (Device::cpu()) and copy it over (Device::buffer_from)",
        file.path().string(), device.name()));
  }
  const RangeRead data{header.data_offset, static_cast<std::size_t>(header.data_bytes), 0, "npy data"};
  auto buffer = std::make_shared<Buffer>(read_ranges(device, file, data.length, std::span(&data, 1)));
  if (!native_order) reverse_each(buffer->bytes(), swap_width(header.dtype));
  TensorView view;
  view.bytes = buffer->bytes();
  view.storage = std::move(buffer);
  return view;
}

}  // namespace

TensorView load_npy(Device& device, const std::filesystem::path& path, FortranOrder fortran_order) {
  const InputFile file(path);
  NpyHeader header = read_header(file);
  if (header.fortran_order && fortran_order == FortranOrder::refuse) {
    const std::uint64_t header_start = header.major_version == 1 ? 10 : 12;
    format_error(path, header_start,
                 "the array is in Fortran (column-major) order, which nuvec does not load as is; save it with "
                 "numpy.ascontiguousarray, or pass FortranOrder::load_transposed to load its transpose "
                 "(shape reversed)");
  }
  static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big);
  const bool native_order = header.big_endian == (std::endian::native == std::endian::big);
  const bool aligned = header.data_offset % dtype_size(header.dtype) == 0;

  TensorView view = native_order && aligned ? map_data(device, file, header) : read_data(device, file, header, native_order);
  view.name = path.stem().string();
  view.dtype = header.dtype;
  view.shape = std::move(header.shape);
  if (header.fortran_order) std::reverse(view.shape.begin(), view.shape.end());
  return view;
}

}  // namespace nuvec::io
