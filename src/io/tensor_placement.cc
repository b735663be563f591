#include "io/tensor_placement.h"

#include <algorithm>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "io/read_ranges.h"
#include "nuvec/buffer.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::io {
namespace {

bool has_bytes(std::span<const TensorExtent> extents) {
  return std::any_of(extents.begin(), extents.end(), [](const TensorExtent& e) { return e.length > 0; });
}

// In place only where every tensor with bytes starts at a multiple of its
// alignment: a mapping starts on a page, so a file offset's remainder is the
// address's.
bool usable_in_place(std::span<const TensorExtent> extents) {
  return std::all_of(extents.begin(), extents.end(), [](const TensorExtent& e) {
    return e.length == 0 || e.file_offset % std::max<std::uint64_t>(e.alignment, 1) == 0;
  });
}

void plan_mapping(TensorPlacement& plan, const InputFile& file, std::span<const TensorExtent> extents) {
  plan.path = LoadPath::mapped;
  if (plan.map_scope == MapScope::whole_file) {
    plan.mapped_bytes = mapping_size(file.size());
    return;
  }
  for (const TensorExtent& e : extents) {
    if (e.length > 0) plan.map_ranges.push_back({e.file_offset, e.length});
  }
  plan.mapped_bytes = mapping_size(std::span<const FileRange>(plan.map_ranges));  // as Device::map_ranges counts
}

void plan_buffer(TensorPlacement& plan, const InputFile& file, std::span<const TensorExtent> extents) {
  plan.path = LoadPath::read;
  // Each extent lies inside the file, but a hostile header may declare many
  // that overlap, so the sum is checked rather than assumed small.
  std::uint64_t at = 0;
  for (const TensorExtent& e : extents) {
    const std::uint64_t start = (at + kReadBufferAlignment - 1) / kReadBufferAlignment * kReadBufferAlignment;
    if (start < at || e.length > UINT64_MAX - start || start + e.length > SIZE_MAX) {
      format_error(file.path(), e.file_offset,
                   fmt::format("its tensors would need a buffer past {} bytes to be read (at {})", SIZE_MAX, e.what));
    }
    plan.buffer_offsets.push_back(start);
    at = start + e.length;
  }
  plan.buffer_length = at;
  // Past the address space: no device can hold it, and its limit refuses it.
  plan.buffer_bytes = allocation_size(static_cast<std::size_t>(at)).value_or(SIZE_MAX);
}

MappedFile map_file(Device& device, const InputFile& file, const TensorPlacement& plan) {
  MappedFile mapping;
  try {
    mapping = plan.map_scope == MapScope::whole_file ? device.map_file(file.fd(), file.path())
                                                     : device.map_ranges(file.fd(), file.path(), plan.map_ranges);
  } catch (const InvalidArgument&) {
    file.check_unchanged();  // ranges past the end: the file shrank just now
    throw;
  }
  // The file must still be what was parsed: one that shrank would fault on
  // access through the mapping; one that grew or was rewritten may no
  // longer match its header.
  file.check_unchanged();
  if (mapping.file_size() != file.size()) {
    format_error(file.path(), std::min(mapping.file_size(), file.size()),
                 fmt::format("the file changed size while being loaded ({} bytes when parsed, {} when mapped)",
                             file.size(), mapping.file_size()));
  }
  return mapping;
}

PlacedTensors place_mapped(Device& device, const InputFile& file, const TensorPlacement& plan,
                           std::span<const TensorExtent> extents) {
  const MappedFile mapping = map_file(device, file, plan);
  PlacedTensors placed;
  placed.bytes.reserve(extents.size());
  for (const TensorExtent& e : extents) {
    placed.bytes.push_back(e.length == 0 ? std::span<const std::byte>{} : mapping.range(e.file_offset, e.length));
  }
  placed.mapped_bytes = mapping.mapped_bytes();
  placed.storage = mapping.share();
  return placed;
}

PlacedTensors place_read(Device& device, const InputFile& file, const TensorPlacement& plan,
                         std::span<const TensorExtent> extents) {
  if (!plan.converted_on_host.empty() && !device.host_addressable()) {
    throw InvalidArgument(fmt::format(
        "cannot load {} onto {}: {}; load it on the CPU (Device::cpu()) and copy it over (Device::buffer_from)",
        file.path().string(), device.name(), plan.converted_on_host));
  }
  std::vector<RangeRead> ranges;
  ranges.reserve(extents.size());
  for (std::size_t i = 0; i < extents.size(); ++i) {
    const TensorExtent& e = extents[i];
    ranges.push_back({e.file_offset, static_cast<std::size_t>(e.length), static_cast<std::size_t>(plan.buffer_offsets[i]),
                      e.what});
  }
  auto buffer = std::make_shared<Buffer>(
      read_ranges(device, file, static_cast<std::size_t>(plan.buffer_length), ranges));
  PlacedTensors placed;
  placed.bytes.reserve(extents.size());
  const std::span<std::byte> all = buffer->bytes();
  for (std::size_t i = 0; i < extents.size(); ++i) {
    placed.bytes.push_back(all.subspan(static_cast<std::size_t>(plan.buffer_offsets[i]),
                                       static_cast<std::size_t>(extents[i].length)));
  }
  if (!plan.converted_on_host.empty()) placed.buffer = all;
  placed.buffer_bytes = buffer->capacity();
  placed.storage = std::move(buffer);
  return placed;
}

}  // namespace

TensorPlacement plan_placement(const InputFile& file, std::span<const TensorExtent> extents,
                               const PlacementRules& rules) {
  for (const TensorExtent& e : extents) {
    if (e.file_offset > file.size() || e.length > file.size() - e.file_offset) {
      format_error(file.path(), e.file_offset,
                   fmt::format("{} ({} bytes) lies past the end of the file ({} bytes)", e.what, e.length, file.size()));
    }
  }
  TensorPlacement plan;
  plan.map_scope = rules.map_scope;
  plan.converted_on_host = rules.converted_on_host;
  if (!has_bytes(extents)) {
    plan.path = LoadPath::none;  // nothing worth mapping or allocating
  } else if (rules.converted_on_host.empty() && usable_in_place(extents)) {
    plan_mapping(plan, file, extents);
  } else {
    plan_buffer(plan, file, extents);
  }
  return plan;
}

PlacedTensors place_tensors(Device& device, const InputFile& file, const TensorPlacement& plan,
                            std::span<const TensorExtent> extents) {
  if (plan.path != LoadPath::read && plan.path != LoadPath::mapped) {
    PlacedTensors none;
    none.bytes.resize(extents.size());
    return none;
  }
  if (plan.path == LoadPath::read && plan.buffer_offsets.size() != extents.size()) {
    throw InvalidArgument(fmt::format("place_tensors: a plan for {} extents was given {}",
                                      plan.buffer_offsets.size(), extents.size()));
  }
  // Before mapping or allocating: a file that has already changed costs nothing.
  file.check_unchanged();
  return plan.path == LoadPath::mapped ? place_mapped(device, file, plan, extents)
                                       : place_read(device, file, plan, extents);
}

std::string_view load_path_name(LoadPath path) {
  switch (path) {
    case LoadPath::mapped:
      return "mapped";
    case LoadPath::read:
      return "read";
    case LoadPath::none:
      return "none";
  }
  return "?";
}

}  // namespace nuvec::io
