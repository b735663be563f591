#include "io/safetensors/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include <fmt/format.h>

#include "nuvec/error.h"

namespace nuvec::io::safetensors_detail {
namespace {

[[noreturn]] void io_failure(std::string_view what, const std::filesystem::path& path, int error) {
  throw IoError(fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(error)), path, error);
}

std::filesystem::path temporary_name(const std::filesystem::path& target) {
  static std::atomic<unsigned> counter{0};
  const unsigned salt = std::random_device{}();
  return target.parent_path() /
         fmt::format(".{}.tmp-{}-{}-{:08x}", target.filename().string(), ::getpid(), counter++, salt);
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
  temporary_ = temporary_name(target_);
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) io_failure("create a temporary file for", target_, errno);
  // A file rewritten in place keeps its permissions.
  if (struct stat st{}; ::stat(target_.c_str(), &st) == 0) (void)::fchmod(fd_, st.st_mode & 07777);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temporary_.c_str());
  }
}

void AtomicFile::write(std::span<const std::byte> bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      io_failure("write", target_, errno);
    }
    done += static_cast<std::size_t>(n);
  }
  size_ += bytes.size();
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) io_failure("flush", target_, errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temporary_.c_str());
    io_failure("close", target_, error);
  }
  if (std::rename(temporary_.c_str(), target_.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary_.c_str());
    io_failure("rename a temporary file over", target_, error);
  }
  // The rename lasts a crash only once the directory is on disk too.
  const std::filesystem::path directory = target_.parent_path().empty() ? "." : target_.parent_path();
  if (const int dir = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
}

}  // namespace nuvec::io::safetensors_detail
