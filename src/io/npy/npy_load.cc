// load_npy: parse the header from a few positioned reads, then place the data
// (io/tensor_placement.h): the file mapped (native order, aligned data) or
// the data read into one buffer.
#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "nuvec/input_file.h"
#include "io/tensor_placement.h"
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

// The data as the placement rule of every format puts it: mapped (native
// order, aligned to its element) or read into one buffer, there swapped into
// native order if needed.
TensorExtent data_extent(const NpyHeader& header) {
  return {header.data_offset, header.data_bytes, dtype_size(header.dtype), "npy data"};
}

PlacementRules placement_rules(const NpyHeader& header) {
  static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big);
  const bool native_order = header.big_endian == (std::endian::native == std::endian::big);
  PlacementRules rules;
  if (!native_order) rules.converted_on_host = "its elements are in the other byte order and must be swapped on the host";
  return rules;
}

}  // namespace

NpyHeader read_npy_header(const std::filesystem::path& path) { return read_header(InputFile(path)); }

Footprint npy_footprint(const std::filesystem::path& path) {
  const InputFile file(path);
  const NpyHeader header = read_header(file);
  const TensorExtent data = data_extent(header);
  return plan_placement(file, std::span(&data, 1), placement_rules(header)).footprint();
}

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
  const TensorExtent data = data_extent(header);
  const TensorPlacement plan = plan_placement(file, std::span(&data, 1), placement_rules(header));
  PlacedTensors placed = place_tensors(device, file, plan, std::span(&data, 1));
  if (!plan.converted_on_host.empty()) reverse_each(placed.buffer, swap_width(header.dtype));
  TensorView view;
  view.bytes = placed.bytes.front();
  view.storage = std::move(placed.storage);
  view.name = path.stem().string();
  view.dtype = header.dtype;
  view.shape = std::move(header.shape);
  if (header.fortran_order) std::reverse(view.shape.begin(), view.shape.end());
  return view;
}

}  // namespace nuvec::io
