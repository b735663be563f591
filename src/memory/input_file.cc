#include "memory/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "nuvec/error.h"

namespace nuvec::io {

void format_error(const std::filesystem::path& file, std::uint64_t offset, std::string_view reason) {
  throw FormatError(fmt::format("{}: at byte {}: {}", file.string(), offset, reason), file, offset);
}

int open_regular_file(const std::filesystem::path& path, std::uint64_t* size) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
  // forever (and a device could block too); it is cleared once the file is
  // known to be regular, where it has no effect on reads anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    throw IoError(fmt::format("cannot open {}: {}", path.string(), std::strerror(error)), path, error);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw IoError(fmt::format("cannot stat {}: {}", path.string(), std::strerror(error)), path, error);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(fmt::format("cannot read {}: it is {}, not a regular file", path.string(), file_kind(st.st_mode)),
                  path, S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(fd);
    throw IoError(fmt::format("cannot read {}: {}", path.string(), std::strerror(error)), path, error);
  }
  if (size != nullptr) *size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

const char* file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a file";
}

void check_writable_regular_file(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of
  // waiting; one with a reader is refused below. The file is created if
  // missing (it is about to be written) but not truncated.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) {
    const int error = errno;
    struct stat st {};
    const std::string kind = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)
                                 ? fmt::format(" (it is {}, not a regular file)", file_kind(st.st_mode))
                                 : std::string{};
    throw IoError(fmt::format("cannot write {}: {}{}", path.string(), std::strerror(error), kind), path, error);
  }
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) {
    throw IoError(fmt::format("cannot write {}: it is {}, not a regular file", path.string(), file_kind(st.st_mode)),
                  path, EINVAL);
  }
}

InputFile::InputFile(std::filesystem::path path) : path_(std::move(path)) { fd_ = open_regular_file(path_, &size_); }

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_exact(std::uint64_t offset, std::span<std::byte> out, std::string_view what) const {
  if (offset > size_ || out.size() > size_ - offset) {
    format_error(path_, offset,
                 fmt::format("{} ({} bytes) runs past the end of the file ({} bytes)", what, out.size(), size_));
  }
  const std::int64_t done = read_fully(fd_, offset, out);
  if (done < 0) {
    throw IoError(fmt::format("cannot read {} at byte {}: {}", path_.string(), offset, std::strerror(-done)), path_,
                  static_cast<int>(-done));
  }
  if (static_cast<std::size_t>(done) < out.size()) {
    format_error(path_, offset + done, fmt::format("{}: the file ends early (it shrank?)", what));
  }
}

std::int64_t read_fully(int fd, std::uint64_t offset, std::span<std::byte> out) noexcept {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return static_cast<std::int64_t>(done);
}

void InputFile::check_unchanged() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    throw IoError(fmt::format("cannot stat {}: {}", path_.string(), std::strerror(error)), path_, error);
  }
  if (static_cast<std::uint64_t>(st.st_size) != size_) {
    format_error(path_, std::min<std::uint64_t>(size_, st.st_size),
                 fmt::format("the file changed size while being loaded ({} bytes, now {})", size_, st.st_size));
  }
}

}  // namespace nuvec::io
