// Which file lies behind host memory: uploads stage bytes of a mapped file
// by reading the file (pread) rather than through the mapping, which costs
// a page fault per few pages and page-table entries to tear down later
// (docs/cuda.md, "Uploads"). Plain C++ over /proc/self/maps, tested without
// a GPU.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec::cuda::detail {

// One line of /proc/PID/maps.
struct MapsEntry {
  std::uintptr_t begin = 0, end = 0;
  bool readable = false, writable = false;
  std::uint64_t offset = 0;  // file offset of `begin`
  unsigned major = 0, minor = 0;
  std::uint64_t inode = 0;  // 0: not a file
  std::string path;         // as the kernel prints it ("/a/b", "/a/b (deleted)", "[heap]", "")
};

// Parses one line; nullopt if it is not in the kernel's format.
std::optional<MapsEntry> parse_maps_line(std::string_view line);

// The files behind this process's read-only file mappings, as they were when
// made. Files are opened when first asked for, and closed with this object.
class FileSources {
 public:
  // Reads /proc/self/maps (empty, so that nothing is found, if it cannot).
  FileSources();
  explicit FileSources(std::vector<MapsEntry> entries);
  FileSources(const FileSources&) = delete;
  FileSources& operator=(const FileSources&) = delete;
  ~FileSources();

  struct Found {
    int file = -1;  // index for fd()
    std::uint64_t offset = 0;
  };
  // The file and offset holding the `length` bytes at `p`, if they lie in one
  // readable, non-writable mapping (its bytes are then the file's) of a file
  // that can still be opened at its path and is the same file (device and
  // inode); nullopt otherwise.
  std::optional<Found> find(const std::byte* p, std::size_t length);
  int fd(int file) const { return files_[static_cast<std::size_t>(file)].fd; }

 private:
  struct File {
    std::string path;
    unsigned major = 0, minor = 0;
    std::uint64_t inode = 0;
    int fd = -1;  // -1: could not be opened, or is another file now
  };
  int file_for(const MapsEntry& entry);

  std::vector<MapsEntry> entries_;  // file mappings, by address
  std::vector<File> files_;
};

// Reads exactly `length` bytes at `offset` of `fd` into `out`, resuming
// after short reads and EINTR. Returns "" or what went wrong (the file ended
// early: it shrank).
std::string read_exactly(int fd, std::byte* out, std::size_t length, std::uint64_t offset);

}  // namespace nuvec::cuda::detail
