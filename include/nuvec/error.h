// The exceptions nuvec raises, named for what went wrong. Every message says
// what was asked, what stood in the way and how to change it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>

#include "nuvec/memory_stats.h"

namespace nuvec {

// An allocation or mapping that the memory limit (or the system) refused.
// Nothing changed: the stats carried are those at refusal, still current.
// requested() is what it would have counted: the size class of an
// allocation, the mapping_size of a mapping (SIZE_MAX if the size overflows).
class OutOfMemory : public std::bad_alloc {
 public:
  OutOfMemory(std::string message, std::size_t requested, MemoryStats stats)
      : message_(std::move(message)), requested_(requested), stats_(stats) {}
  const char* what() const noexcept override { return message_.c_str(); }
  std::size_t requested() const { return requested_; }
  const MemoryStats& stats() const { return stats_; }

 private:
  std::string message_;
  std::size_t requested_;
  MemoryStats stats_;
};

// A system call on a file or on memory failed. `path` is the file (empty for
// calls on memory, such as mlock), `error_code` the errno.
class IoError : public std::runtime_error {
 public:
  IoError(std::string message, std::filesystem::path path, int error_code)
      : std::runtime_error(std::move(message)), path_(std::move(path)), error_code_(error_code) {}
  const std::filesystem::path& path() const { return path_; }
  int error_code() const { return error_code_; }

 private:
  std::filesystem::path path_;
  int error_code_;
};

// A file whose contents break its format: `offset` is where, in bytes.
class FormatError : public std::runtime_error {
 public:
  FormatError(std::string message, std::filesystem::path file, std::uint64_t offset)
      : std::runtime_error(std::move(message)), file_(std::move(file)), offset_(offset) {}
  const std::filesystem::path& file() const { return file_; }
  std::uint64_t offset() const { return offset_; }

 private:
  std::filesystem::path file_;
  std::uint64_t offset_;
};

// A value the caller passed that cannot be honoured (a malformed size, a
// wired limit above what may be locked, a range outside a file).
class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// An attempt to write memory that is read-only (a mapped file).
class ReadOnly : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace nuvec
