// Reading files as hostile input (checkpoints, traces, configs): an open
// regular file with its size fixed at open time, exact positioned reads that
// refuse to run past it, and FormatError with the file, the offset and the
// reason. Every loader of nuvec reads its inputs through this; so may a
// program that reads a format of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

namespace nuvec::io {

// Raises FormatError: "<file>: at byte <offset>: <reason>".
[[noreturn]] void format_error(const std::filesystem::path& file, std::uint64_t offset, std::string_view reason);

class InputFile {
 public:
  // Opens read-only if `path` is a regular file, without ever blocking: a
  // FIFO, a device or a directory is refused at once with an IoError that
  // says what the path is; IoError (with the path and errno) on any other
  // failure. The descriptor is close-on-exec.
  explicit InputFile(std::filesystem::path path);
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&&) = delete;
  InputFile(const InputFile&) = delete;
  ~InputFile();

  const std::filesystem::path& path() const { return path_; }
  // The size when opened; every read is checked against it.
  std::uint64_t size() const { return size_; }
  int fd() const { return fd_; }

  // Reads exactly out.size() bytes at `offset`; FormatError naming `what`
  // if they lie past the end of the file (or the file shrank), IoError if
  // the system fails. Safe to call from several threads at once.
  void read_exact(std::uint64_t offset, std::span<std::byte> out, std::string_view what) const;

  // Raises FormatError if the file's size is no longer size() (it changed
  // between parsing and mapping).
  void check_unchanged() const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace nuvec::io
