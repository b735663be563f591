// A file that appears whole or not at all: written under a temporary name in
// the target's directory, flushed to disk, then renamed over the target. A
// reader (or a crash) never sees half a checkpoint, and a checkpoint can be
// rewritten while it is still open (mapped) elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace nuvec::io::safetensors_detail {

class AtomicFile {
 public:
  // IoError if the temporary file cannot be created.
  explicit AtomicFile(std::filesystem::path target);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFile();

  // Appends; IoError on failure.
  void write(std::span<const std::byte> bytes);
  std::uint64_t size() const { return size_; }

  // fsync, close and rename over the target; IoError on failure.
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temporary_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace nuvec::io::safetensors_detail
