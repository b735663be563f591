// The files behind mappings (src/cuda/file_sources.h), which uploads read
// instead of touching the mapping: found only where the mapping's bytes are
// the file's, at the right offset. Plain C++ (Linux): runs everywhere.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "cuda/file_sources.h"
#include "support/temp_file.h"

namespace {

using nuvec::cuda::detail::FileSources;
using nuvec::cuda::detail::parse_maps_line;
using nuvec::cuda::detail::read_exactly;

TEST(CudaMapsLine, ParsesTheKernelsFormat) {
  const auto e = parse_maps_line("7f12a000-7f12c000 r--s 00003000 fd:01 123456     /data/a model.safetensors");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->begin, 0x7f12a000u);
  EXPECT_EQ(e->end, 0x7f12c000u);
  EXPECT_TRUE(e->readable);
  EXPECT_FALSE(e->writable);
  EXPECT_EQ(e->offset, 0x3000u);
  EXPECT_EQ(e->major, 0xfdu);
  EXPECT_EQ(e->minor, 1u);
  EXPECT_EQ(e->inode, 123456u);
  EXPECT_EQ(e->path, "/data/a model.safetensors") << "spaces belong to the path";

  const auto anon = parse_maps_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0");
  ASSERT_TRUE(anon.has_value());
  EXPECT_EQ(anon->inode, 0u);
  EXPECT_EQ(anon->path, "");
  for (const char* bad : {"", "zz-1 r--p 0 0:0 0", "1000-2000 r--p", "2000-1000 r--p 0 00:00 0",
                          "1000-2000 r--p 0 00:00 x /f"}) {
    EXPECT_FALSE(parse_maps_line(bad).has_value()) << bad;
  }
}

class Mapped {
 public:
  Mapped(const std::filesystem::path& path, std::size_t length, int prot, int flags) : length_(length) {
    const int fd = open(path.c_str(), prot & PROT_WRITE ? O_RDWR : O_RDONLY);
    EXPECT_GE(fd, 0);
    p_ = static_cast<std::byte*>(mmap(nullptr, length, prot, flags, fd, 0));
    close(fd);
    EXPECT_NE(p_, MAP_FAILED);
  }
  ~Mapped() { munmap(p_, length_); }
  std::byte* data() const { return p_; }

 private:
  std::byte* p_;
  std::size_t length_;
};

TEST(CudaFileSources, FindsTheFileAndOffsetOfAReadOnlyMapping) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  nuvec_test::TempFile file(3 * page + 100, 5);
  Mapped m(file.path(), file.size(), PROT_READ, MAP_SHARED);
  FileSources sources;
  const std::size_t at = page + 17, n = 2 * page;
  const auto found = sources.find(m.data() + at, n);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->offset, at);
  std::vector<std::byte> read(n);
  EXPECT_EQ(read_exactly(sources.fd(found->file), read.data(), n, found->offset), "");
  EXPECT_EQ(std::memcmp(read.data(), m.data() + at, n), 0);
  // The same file again: the same descriptor.
  const auto again = sources.find(m.data(), 1);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->file, found->file);
  EXPECT_EQ(again->offset, 0u);
  // Past the mapping's end: not found.
  EXPECT_FALSE(sources.find(m.data() + at, 4 * page).has_value());
}

TEST(CudaFileSources, AnonymousAndWritableMemoryAreNotFiles) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  nuvec_test::TempFile file(2 * page, 6);
  Mapped writable(file.path(), file.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE);
  std::vector<std::byte> heap(4 * page);
  FileSources sources;
  EXPECT_FALSE(sources.find(writable.data(), 10).has_value()) << "a writable mapping may differ from its file";
  EXPECT_FALSE(sources.find(heap.data(), heap.size()).has_value());
  int local = 0;
  EXPECT_FALSE(sources.find(reinterpret_cast<std::byte*>(&local), sizeof local).has_value());
}

TEST(CudaFileSources, AReplacedOrDeletedFileIsNotRead) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  nuvec_test::TempFile file(2 * page, 7);
  Mapped m(file.path(), file.size(), PROT_READ, MAP_SHARED);
  nuvec_test::TempFile other(2 * page, 8);
  std::filesystem::rename(other.path(), file.path());  // the path now names another file
  FileSources replaced;
  EXPECT_FALSE(replaced.find(m.data(), page).has_value());
  std::filesystem::remove(file.path());
  FileSources deleted;
  EXPECT_FALSE(deleted.find(m.data(), page).has_value());
}

TEST(CudaFileSources, ReadingPastTheEndSaysTheFileShrank) {
  nuvec_test::TempFile file(1000, 9);
  const int fd = open(file.path().c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<std::byte> out(2000);
  EXPECT_EQ(read_exactly(fd, out.data(), 1000, 0), "");
  EXPECT_NE(read_exactly(fd, out.data(), 2000, 0).find("ended early"), std::string::npos);
  close(fd);
}

}  // namespace
