#include "memory/file_mapping.h"

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::detail {

FileMapping::FileMapping(MappingOwner& owner, const OpenFile& file, std::span<const FileRange> ranges,
                         bool whole_file)
    : owner_(owner) {
  path_ = file.path();
  file_size_ = file.size();
  whole_file_ = whole_file;
  if (whole_file) {
    if (file_size_ > 0) regions_.push_back({0, mapping_size(file_size_), nullptr});
  } else {
    for (const FileRange& r : ranges) {
      if (r.length == 0 || r.offset > file_size_ || r.length > file_size_ - r.offset) {
        throw InvalidArgument(fmt::format("cannot map bytes [{}, {}) of {}: the file has {} bytes", r.offset,
                                          r.offset + r.length, path_.string(), file_size_));
      }
    }
    for (const FileRange& r : page_rounded_ranges(ranges)) {
      regions_.push_back({r.offset, static_cast<std::size_t>(r.length), nullptr});
    }
  }
  for (const Region& r : regions_) mapped_bytes_ += r.length;
  size = mapped_bytes_;
}

FileMapping::~FileMapping() {
  if (live_) owner_.unmap(*this);
}

void FileMapping::map_regions(FileMapper& files, const OpenFile& file) {
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    try {
      regions_[i].address = static_cast<const std::byte*>(files.map(file, regions_[i].file_offset, regions_[i].length));
    } catch (...) {
      while (i-- > 0) files.unmap(regions_[i].address, regions_[i].length);
      throw;
    }
  }
}

void FileMapping::unmap_regions(FileMapper& files) noexcept {
  for (const Region& r : regions_) files.unmap(r.address, r.length);
}

int FileMapping::wire(Wiring& wiring) {
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    if (const int error = wiring.wire(regions_[i].address, regions_[i].length); error != 0) {
      while (i-- > 0) wiring.unwire(regions_[i].address, regions_[i].length);
      return error;
    }
  }
  return 0;
}

void FileMapping::unwire(Wiring& wiring) noexcept {
  for (const Region& r : regions_) wiring.unwire(r.address, r.length);
}

}  // namespace nuvec::detail
