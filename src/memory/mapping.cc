// The read side of a Mapping: what its owners may look at.
#include <algorithm>

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/mapped_file.h"

namespace nuvec {

std::span<const std::byte> Mapping::bytes() const {
  if (!whole_file_) {
    throw InvalidArgument(fmt::format("{} is mapped in ranges, not whole: read it with range(offset, length)",
                                      path_.string()));
  }
  if (regions_.empty()) return {};
  return {regions_.front().address, static_cast<std::size_t>(file_size_)};
}

std::span<const std::byte> Mapping::range(std::uint64_t offset, std::uint64_t length) const {
  // The last region starting at or before `offset` is the only one that can hold it.
  auto it = std::upper_bound(regions_.begin(), regions_.end(), offset,
                             [](std::uint64_t value, const Region& r) { return value < r.file_offset; });
  const bool inside_file = offset <= file_size_ && length <= file_size_ - offset;
  if (inside_file && it != regions_.begin()) {
    const Region& region = *std::prev(it);
    const std::uint64_t within = offset - region.file_offset;
    if (within <= region.length && length <= region.length - within) {
      return {region.address + within, static_cast<std::size_t>(length)};
    }
  }
  throw InvalidArgument(fmt::format("bytes [{}, {}) of {} are not mapped (file size {}, {} mapped range(s))", offset,
                                    offset + length, path_.string(), file_size_, regions_.size()));
}

std::span<std::byte> Mapping::mutable_bytes() const {
  throw ReadOnly(fmt::format("{} is mapped read-only and shared with the page cache; copy what you need to change "
                             "into a buffer (Device::buffer_from)",
                             path_.string()));
}

}  // namespace nuvec
