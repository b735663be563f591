#include "scratch_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <string>
#include <system_error>

#include <fmt/core.h>

#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::tool {
namespace {

// "<what>: <strerror>", as IoError for `path`.
[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int error) {
  throw IoError(fmt::format("{}: {}", what, std::strerror(error)), path, error);
}

}  // namespace

Scratch::Scratch(const std::optional<std::filesystem::path>& dir) {
  if (dir) {
    dir_ = *dir;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec)) {
      const bool exists = std::filesystem::exists(dir_, ec);
      fail(fmt::format("--dir {}", dir_.string()), dir_, ec ? ec.value() : exists ? ENOTDIR : ENOENT);
    }
    return;
  }
  std::error_code ec;
  const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) fail("cannot find the temporary directory (set TMPDIR or use --dir DIR)", {}, ec.value());
  std::string pattern = (base / "nuvec-demo-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    fail(fmt::format("cannot create a directory in {} (set TMPDIR or use --dir DIR)", base.string()),
         base, errno);
  }
  dir_ = pattern;
  owns_dir_ = true;
}

Scratch::~Scratch() {
  std::error_code ec;  // best effort: a destructor cannot report
  for (const auto& file : files_) std::filesystem::remove(file, ec);
  if (owns_dir_) std::filesystem::remove_all(dir_, ec);
}

std::filesystem::path Scratch::write_file(std::string_view name, std::size_t bytes) {
  const std::filesystem::path path = dir_ / name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(fmt::format("cannot create {}", path.string()), path, errno);
  files_.push_back(path);

  std::string chunk(std::size_t{1} << 20, '\0');
  for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(i * 131 + 7);
  std::size_t written = 0;
  while (written < bytes) {
    const std::size_t n = std::min(chunk.size(), bytes - written);
    const ssize_t r = ::write(fd, chunk.data(), n);
    if (r < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      fail(fmt::format("cannot write {} to {}", format_bytes(bytes), path.string()), path, error);
    }
    written += static_cast<std::size_t>(r);
  }
  if (::close(fd) != 0) fail(fmt::format("cannot write {}", path.string()), path, errno);
  return path;
}

}  // namespace nuvec::tool
