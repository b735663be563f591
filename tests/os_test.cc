// The figures against the operating system's own view, /proc/self/smaps and
// mincore: locked memory equals `wired` (while every wired item is a page or
// more, so that no two share a page), a mapping's VMA is mapping_size long,
// and a released cached extent's pages leave the process.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/nuvec.h"
#include "support/temp_file.h"

namespace {

using nuvec_test::TempFile;

struct Vma {
  std::uintptr_t start = 0, end = 0;
  std::string perms;
  std::size_t size = 0;    // bytes, from Size:
  std::size_t locked = 0;  // bytes, from Locked:
};

std::vector<Vma> read_smaps() {
  std::ifstream in("/proc/self/smaps");
  std::vector<Vma> vmas;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    const auto dash = first.find('-');
    if (!first.empty() && first.back() != ':' && dash != std::string::npos) {
      Vma vma;
      vma.start = std::stoull(first.substr(0, dash), nullptr, 16);
      vma.end = std::stoull(first.substr(dash + 1), nullptr, 16);
      fields >> vma.perms;
      vmas.push_back(vma);
      continue;
    }
    std::size_t kb = 0;
    if (vmas.empty() || !(fields >> kb)) continue;
    if (first == "Size:") vmas.back().size = kb * 1024;
    if (first == "Locked:") vmas.back().locked = kb * 1024;
  }
  return vmas;
}

std::size_t locked_bytes() {
  std::size_t total = 0;
  for (const Vma& vma : read_smaps()) total += vma.locked;
  return total;
}

std::optional<Vma> vma_at(const void* address) {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  for (const Vma& vma : read_smaps()) {
    if (vma.start <= a && a < vma.end) return vma;
  }
  return std::nullopt;
}

// Sanitizers (ASan, TSan) intercept mlock and ignore it: probe once.
bool mlock_really_locks() {
  const std::size_t page = nuvec::page_size();
  void* p = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  bool locked = false;
  if (::mlock(p, page) == 0) {
    const std::optional<Vma> vma = vma_at(p);
    locked = vma && vma->locked >= page;
    ::munlock(p, page);
  }
  ::munmap(p, page);
  return locked;
}

class AgainstTheOs : public ::testing::Test {
 protected:
  nuvec::MemoryStats stats() const { return device_->memory(); }
  nuvec::Device& dev() { return *device_; }

  const std::size_t page = nuvec::page_size();
  std::unique_ptr<nuvec::Device> device_ =
      std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), false);
};

TEST_F(AgainstTheOs, LockedMemoryEqualsWired) {
  if (!mlock_really_locks()) GTEST_SKIP() << "mlock is a no-op here (a sanitizer intercepts it)";
  const std::size_t baseline = locked_bytes();
  EXPECT_EQ(baseline, 0u) << "something else in the process is locked";
  auto expect_locked_is_wired = [&](const char* when) {
    const nuvec::MemoryStats s = stats();
    EXPECT_EQ(locked_bytes() - baseline, s.wired) << when << ": " << s;
  };

  TempFile file(10 * page + 100, 1);
  dev().set_wired_limit(64 * page);
  nuvec::Buffer a = dev().new_buffer(4 * page);
  nuvec::Buffer b = dev().new_buffer(8 * page);
  nuvec::Buffer c = dev().new_buffer(16 * page);
  nuvec::MappedFile f = dev().map_file(file.path());
  nuvec::Buffer d = dev().new_buffer(40 * page);  // does not fit: waits
  EXPECT_EQ(stats().wired, (4 + 8 + 16 + 11) * page);
  EXPECT_EQ(stats().wired_mapped, 11 * page);
  expect_locked_is_wired("a, b, c and the file wired, d waiting");

  b.reset();  // stays wired in the cache
  EXPECT_EQ(stats().wired, (4 + 8 + 16 + 11) * page);
  expect_locked_is_wired("b freed");

  dev().set_wired_limit(20 * page);  // b (cached), then the file go
  EXPECT_EQ(stats().wired, 20 * page);
  EXPECT_EQ(stats().wired_mapped, 0u);
  expect_locked_is_wired("limit lowered");

  dev().set_wired_limit(100 * page);  // the file and d are promoted
  EXPECT_EQ(stats().wired, (4 + 16 + 11 + 40) * page);
  expect_locked_is_wired("limit raised");

  c.reset();
  dev().clear_cache();
  EXPECT_EQ(stats().wired, (4 + 11 + 40) * page);
  expect_locked_is_wired("c released");

  f.reset();
  expect_locked_is_wired("file unmapped");

  a.reset();
  d.reset();
  expect_locked_is_wired("all freed, wired in the cache");
  dev().set_wired_limit(0);
  EXPECT_EQ(stats().wired, 0u);
  expect_locked_is_wired("limit 0");
  EXPECT_EQ(locked_bytes(), baseline);
}

// Pages of [p, p + bytes) resident in memory (mincore).
std::size_t resident_pages(const std::byte* p, std::size_t bytes) {
  const std::size_t page = nuvec::page_size();
  std::vector<unsigned char> in_core(bytes / page);
  if (::mincore(const_cast<std::byte*>(p), bytes, in_core.data()) != 0) return static_cast<std::size_t>(-1);
  return static_cast<std::size_t>(std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return c & 1; }));
}

TEST_F(AgainstTheOs, ReleasedCacheLeavesTheProcess) {
  const std::size_t pages = 64;
  nuvec::Buffer b = dev().new_buffer(pages * page);
  std::byte* const at = b.data();
  std::memset(at, 0x5a, pages * page);
  EXPECT_EQ(resident_pages(at, pages * page), pages);
  b.reset();
  EXPECT_EQ(resident_pages(at, pages * page), pages) << "cached: kept for reuse";
  dev().clear_cache();
  EXPECT_EQ(resident_pages(at, pages * page), 0u) << "released: a hole, its pages gone";
  // The same address space serves again, fresh (zero) pages on first touch.
  nuvec::Buffer c = dev().new_buffer(pages * page);
  EXPECT_EQ(c.data(), at);
  EXPECT_EQ(c.data()[0], std::byte{0});
  EXPECT_EQ(c.data()[pages * page - 1], std::byte{0});
}

TEST_F(AgainstTheOs, WholeFileMappingVmaIsMappingSize) {
  TempFile file(7 * page + 123, 2);
  nuvec::MappedFile f = dev().map_file(file.path());
  const std::optional<Vma> vma = vma_at(f.bytes().data());
  ASSERT_TRUE(vma.has_value());
  EXPECT_EQ(vma->start, reinterpret_cast<std::uintptr_t>(f.bytes().data()));
  EXPECT_EQ(vma->end - vma->start, nuvec::mapping_size(file.size()));
  EXPECT_EQ(vma->size, nuvec::mapping_size(file.size()));
  EXPECT_EQ(vma->size, stats().mapped);
  EXPECT_EQ(vma->perms, "r--s") << "mapped files are read-only shared mappings";
}

}  // namespace
