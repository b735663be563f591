#include "cuda/file_sources.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

namespace nuvec::cuda::detail {

namespace {

// Parses a hexadecimal field of `line` ending at `stop`, advancing `at`.
template <class T>
bool hex_field(std::string_view line, std::size_t& at, char stop, T& out) {
  const std::size_t end = line.find(stop, at);
  if (end == std::string_view::npos || end == at) return false;
  const auto [ptr, ec] = std::from_chars(line.data() + at, line.data() + end, out, 16);
  if (ec != std::errc() || ptr != line.data() + end) return false;
  at = end + 1;
  return true;
}

}  // namespace

// "7f12a000-7f12b000 r--s 00001000 fd:01 1234   /path/with spaces"
std::optional<MapsEntry> parse_maps_line(std::string_view line) {
  MapsEntry e;
  std::size_t at = 0;
  if (!hex_field(line, at, '-', e.begin) || !hex_field(line, at, ' ', e.end) || e.end < e.begin) return std::nullopt;
  if (line.size() < at + 5 || line[at + 4] != ' ') return std::nullopt;
  e.readable = line[at] == 'r';
  e.writable = line[at + 1] == 'w';
  at += 5;
  if (!hex_field(line, at, ' ', e.offset) || !hex_field(line, at, ':', e.major) || !hex_field(line, at, ' ', e.minor)) {
    return std::nullopt;
  }
  const std::size_t inode_end = std::min(line.find(' ', at), line.size());
  const auto [ptr, ec] = std::from_chars(line.data() + at, line.data() + inode_end, e.inode, 10);
  if (ec != std::errc() || ptr != line.data() + inode_end) return std::nullopt;
  at = line.find_first_not_of(' ', inode_end);
  if (at != std::string_view::npos) e.path = line.substr(at);
  return e;
}

namespace {

std::vector<MapsEntry> this_process_maps() {
  std::ifstream in("/proc/self/maps");
  std::vector<MapsEntry> entries;
  for (std::string line; std::getline(in, line);) {
    if (auto e = parse_maps_line(line)) entries.push_back(std::move(*e));
  }
  return entries;
}

}  // namespace

FileSources::FileSources() : FileSources(this_process_maps()) {}

FileSources::FileSources(std::vector<MapsEntry> entries) {
  for (MapsEntry& e : entries) {
    // Only read-only mappings of files: their bytes are the file's.
    if (e.inode != 0 && e.readable && !e.writable && !e.path.empty() && e.path.front() == '/') {
      entries_.push_back(std::move(e));
    }
  }
  std::sort(entries_.begin(), entries_.end(), [](const MapsEntry& a, const MapsEntry& b) { return a.begin < b.begin; });
}

FileSources::~FileSources() {
  for (const File& f : files_) {
    if (f.fd >= 0) close(f.fd);
  }
}

std::optional<FileSources::Found> FileSources::find(const std::byte* p, std::size_t length) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  // The last mapping starting at or before `a`.
  auto it = std::upper_bound(entries_.begin(), entries_.end(), a,
                             [](std::uintptr_t x, const MapsEntry& e) { return x < e.begin; });
  if (it == entries_.begin()) return std::nullopt;
  const MapsEntry& e = *--it;
  if (a >= e.end || length > e.end - a) return std::nullopt;
  const int file = file_for(e);
  if (file < 0) return std::nullopt;
  return Found{file, e.offset + (a - e.begin)};
}

int FileSources::file_for(const MapsEntry& entry) {
  for (std::size_t i = 0; i < files_.size(); ++i) {
    const File& f = files_[i];
    if (f.inode == entry.inode && f.major == entry.major && f.minor == entry.minor && f.path == entry.path) {
      return f.fd >= 0 ? static_cast<int>(i) : -1;
    }
  }
  File f{entry.path, entry.major, entry.minor, entry.inode, -1};
  // The path may name another file by now (replaced, or " (deleted)"
  // appended): only the same device and inode will do.
  // O_NONBLOCK: the path may name a FIFO by now, which would block the open.
  const int fd = open(entry.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) {
    struct stat st {};
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_ino) == entry.inode &&
        major(st.st_dev) == entry.major && minor(st.st_dev) == entry.minor) {
      f.fd = fd;
      // Uploads read the file in order: a larger readahead window when the
      // pages are not cached yet (advice; nothing depends on it).
      (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    } else {
      close(fd);
    }
  }
  files_.push_back(std::move(f));
  return files_.back().fd >= 0 ? static_cast<int>(files_.size() - 1) : -1;
}

std::string read_exactly(int fd, std::byte* out, std::size_t length, std::uint64_t offset) {
  while (length > 0) {
    const ssize_t n = pread(fd, out, length, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::string("pread: ") + std::strerror(errno);
    }
    if (n == 0) return "the file ended early (it shrank while being read)";
    out += n;
    length -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return {};
}

}  // namespace nuvec::cuda::detail
