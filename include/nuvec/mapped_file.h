// Read-only, zero-copy mappings of files, counted in a device's `mapped`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace nuvec {

// A byte range of a file, by file offset.
struct FileRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// The page-aligned pieces Device::map_ranges maps for `ranges`: each widened
// to whole pages, sorted by offset, overlapping or touching ones merged.
std::vector<FileRange> page_rounded_ranges(std::span<const FileRange> ranges);
// What Device::map_ranges counts in `mapped` for `ranges`.
std::size_t mapping_size(std::span<const FileRange> ranges);

// The mapping itself, shared by its MappedFile and any views of it (tensors):
// it is unmapped, and `mapped` falls, when the last owner is gone.
class Mapping {
 public:
  virtual ~Mapping() = default;

  const std::filesystem::path& path() const { return path_; }
  // The file's length when it was mapped.
  std::uint64_t file_size() const { return file_size_; }
  // What this mapping counts in `mapped` (page-rounded).
  std::size_t mapped_bytes() const { return mapped_bytes_; }
  // True when the whole file is mapped (Device::map_file).
  bool whole_file() const { return whole_file_; }

  // The whole file. InvalidArgument for a mapping of ranges.
  std::span<const std::byte> bytes() const;
  // `length` bytes at file offset `offset`; InvalidArgument unless they lie
  // inside one mapped range.
  std::span<const std::byte> range(std::uint64_t offset, std::uint64_t length) const;
  // Always raises ReadOnly: mapped files are never written through.
  [[noreturn]] std::span<std::byte> mutable_bytes() const;

  // One contiguous mapped piece of the file, page-aligned in the file.
  struct Region {
    std::uint64_t file_offset = 0;
    std::size_t length = 0;  // page-rounded
    const std::byte* address = nullptr;
  };

 protected:

  std::filesystem::path path_;
  std::uint64_t file_size_ = 0;
  std::size_t mapped_bytes_ = 0;
  bool whole_file_ = false;
  std::vector<Region> regions_;
};

// Move-only RAII handle to a Mapping. share() hands out further owners.
class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(std::shared_ptr<const Mapping> mapping) : mapping_(std::move(mapping)) {}
  MappedFile(MappedFile&&) noexcept = default;
  MappedFile& operator=(MappedFile&&) noexcept = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  void reset() { mapping_.reset(); }
  bool empty() const { return mapping_ == nullptr; }

  const std::filesystem::path& path() const { return mapping_->path(); }
  std::uint64_t file_size() const { return mapping_->file_size(); }
  std::size_t mapped_bytes() const { return mapping_->mapped_bytes(); }
  std::span<const std::byte> bytes() const { return mapping_->bytes(); }
  std::span<const std::byte> range(std::uint64_t offset, std::uint64_t length) const {
    return mapping_->range(offset, length);
  }
  [[noreturn]] std::span<std::byte> mutable_bytes() const { mapping_->mutable_bytes(); }

  // Another owner of the same mapping (for views that must keep it alive).
  std::shared_ptr<const Mapping> share() const { return mapping_; }

 private:
  std::shared_ptr<const Mapping> mapping_;
};

}  // namespace nuvec
