// Reading checkpoint files as hostile input: an open file with its size
// fixed at open time, exact positioned reads that refuse to run past it, and
// FormatError with the file, the offset and the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace nuvec::io {

// Raises FormatError: "<file>: at byte <offset>: <reason>".
[[noreturn]] void format_error(const std::filesystem::path& file, std::uint64_t offset, std::string_view reason);

// Opens `path` read-only if it is a regular file, without ever blocking (a
// FIFO, a device or a directory is refused at once with an IoError that says
// what the path is); returns the descriptor (close-on-exec) and, if `size` is
// given, the file's size. Every loader opens its inputs through this.
int open_regular_file(const std::filesystem::path& path, std::uint64_t* size = nullptr);

// What a stat mode is, for messages: "a FIFO (named pipe)", "a directory", ...
const char* file_kind(unsigned mode);

// IoError unless `path` can be written as a regular file (created if
// missing, left as it is otherwise); never blocks. For outputs written
// later, such as NUVEC_TRACE, so that the error comes at once.
void check_writable_regular_file(const std::filesystem::path& path);

// Positioned reads into `out` at `offset` until it is full, the file ends or
// the system refuses (EINTR is retried): the bytes read, or -errno.
std::int64_t read_fully(int fd, std::uint64_t offset, std::span<std::byte> out) noexcept;

class InputFile {
 public:
  // Opens read-only; IoError (with the path and errno) on failure, or when it
  // is not a regular file.
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
