#include "io/file.h"

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

InputFile::InputFile(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int error = errno;
    throw IoError(fmt::format("cannot open {}: {}", path_.string(), std::strerror(error)), path_, error);
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int error = S_ISREG(st.st_mode) ? errno : EINVAL;
    ::close(fd_);
    throw IoError(fmt::format("cannot read {}: {}", path_.string(),
                              error == EINVAL ? "not a regular file" : std::strerror(error)),
                  path_, error);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

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
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      throw IoError(fmt::format("cannot read {} at byte {}: {}", path_.string(), offset + done, std::strerror(error)),
                    path_, error);
    }
    if (n == 0) format_error(path_, offset + done, fmt::format("{}: the file ends early (it shrank?)", what));
    done += static_cast<std::size_t>(n);
  }
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
