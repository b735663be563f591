// The read side of a Mapping: what its owners may look at.
#include <algorithm>

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/mapped_file.h"
#include "nuvec/memory.h"

namespace nuvec {

std::vector<FileRange> page_rounded_ranges(std::span<const FileRange> ranges) {
  const std::uint64_t page = page_size();
  std::vector<FileRange> widened;
  widened.reserve(ranges.size());
  for (const FileRange& r : ranges) {
    const std::uint64_t begin = r.offset / page * page;
    widened.push_back({begin, mapping_size(r.offset + r.length) - begin});
  }
  std::sort(widened.begin(), widened.end(), [](const FileRange& a, const FileRange& b) { return a.offset < b.offset; });
  std::vector<FileRange> merged;
  for (const FileRange& r : widened) {
    if (!merged.empty() && r.offset <= merged.back().offset + merged.back().length) {
      const std::uint64_t end = std::max(merged.back().offset + merged.back().length, r.offset + r.length);
      merged.back().length = end - merged.back().offset;
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::size_t mapping_size(std::span<const FileRange> ranges) {
  std::uint64_t total = 0;
  for (const FileRange& r : page_rounded_ranges(ranges)) total += r.length;
  return static_cast<std::size_t>(total);
}

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
