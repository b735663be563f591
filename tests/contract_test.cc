// The MemoryStats contract (docs/design.md) and the allocator policy
// (docs/allocator-policy.md), as tests. DeviceContract is one suite run over
// every device factory, so each backend meets the same contract.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cuda/committing_backend.h"
#include "cuda/cuda_backend.h"
#include "nuvec/cuda.h"
#include "nuvec/memory_stats_json.h"
#include "nuvec/nuvec.h"
#include "support/scoped_env.h"
#include "support/text.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"

namespace {

using nuvec::MemoryStats;
using nuvec_test::ScopedEnv;
using nuvec_test::TempFile;

using nuvec_test::contains;
using nuvec_test::kMiB;

// ---------------------------------------------------------------------------
// DeviceContract: one suite, every device.

struct DeviceFactory {
  std::string name;
  std::function<std::unique_ptr<nuvec::Device>()> make;
  // What a buffer of `len` bytes counts in `active` on this device.
  std::function<std::size_t(std::size_t)> block_size;
  // The memory limit a new device starts with.
  std::function<std::size_t()> default_memory_limit;
  // The page of its size classes: whole pages beyond it, and the best-fit bound.
  std::size_t class_page;
  // A buffer's bytes, read back into host memory.
  std::function<std::vector<std::byte>(const nuvec::Buffer&)> read;
  // Empty when the device can be made here; otherwise why not (the suite skips).
  std::function<std::string()> unavailable;
  // Its blocks come from an arena of reservations (split and merged; one
  // system allocation per reservation), not one system allocation each.
  bool arena = false;
  // The wired limit a new device starts with: 0, except on a GPU, whose
  // uploads stage through page-locked memory (docs/cuda.md).
  std::size_t default_wired_limit = 0;
};

void PrintTo(const DeviceFactory& f, std::ostream* os) { *os << f.name; }

DeviceFactory cpu_factory() {
  return {"cpu",
          [] { return std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), false); },
          [](std::size_t len) { return *nuvec::allocation_size(len); },
          [] { return nuvec::physical_memory(); },
          nuvec::page_size(),
          [](const nuvec::Buffer& b) { return std::vector<std::byte>(b.data(), b.data() + b.size()); },
          [] { return std::string(); },
          /*arena=*/true};
}

// The CPU backend without reservations: the policy of backends that cannot
// reserve address space (each block its own allocation), tested here where
// there is no GPU.
DeviceFactory cpu_blocks_factory() {
  DeviceFactory f = cpu_factory();
  f.name = "cpu_blocks";
  f.make = [] {
    return std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(nuvec::cpu::SystemCalls::real(),
                                                                    {.reservations = false}),
                                           false);
  };
  f.arena = false;
  return f;
}

// GPU 0: buffers are device memory, read back with a copy. Blocks are carved
// from reserved device address space (the arena, committed 2 MiB at a time).
DeviceFactory cuda_factory() {
  return {"cuda0",
          [] { return std::make_unique<nuvec::Device>(nuvec::cuda::make_backend(0, {}), false); },
          [](std::size_t len) { return *nuvec::cuda::allocation_size(len); },
          [] { return nuvec::cuda::device_info(0).total_memory; },
          nuvec::cuda::kLargeStep,
          [](const nuvec::Buffer& b) {
            std::vector<std::byte> bytes(b.size());
            nuvec::cuda::copy_to_host(bytes, b);
            return bytes;
          },
          [] {
            std::string why;
            return nuvec::cuda::device_count(&why) > 0 ? std::string() : "no CUDA device: " + why;
          },
          /*arena=*/true,
          /*default_wired_limit=*/nuvec::cuda::kDefaultWiredLimit};
}

// GPU 0 with one cudaMalloc per block, reused whole.
DeviceFactory cuda_blocks_factory() {
  DeviceFactory f = cuda_factory();
  f.name = "cuda0_blocks";
  f.make = [] {
    return std::make_unique<nuvec::Device>(nuvec::cuda::make_backend(0, {.reservations = false}), false);
  };
  f.arena = false;
  return f;
}

// The CUDA arena's shape on the host (tests/cuda/committing_backend.h):
// CUDA's size classes, and pages usable only once the allocator has
// committed them, out of 1 GiB. Runs everywhere, so that CI holds the commit
// path to the contract; a page it forgot to commit faults.
DeviceFactory committing_factory() {
  DeviceFactory f = cpu_factory();
  f.name = "committing";
  f.make = [] {
    return std::make_unique<nuvec::Device>(std::make_unique<nuvec_test::CommittingBackend>(std::size_t{1} << 30),
                                           false);
  };
  f.block_size = [](std::size_t len) { return *nuvec::cuda::allocation_size(len); };
  f.default_memory_limit = [] { return nuvec_test::CommittingBackend::kMemoryLimit; };
  f.class_page = nuvec::cuda::kLargeStep;
  return f;
}

class DeviceContract : public ::testing::TestWithParam<DeviceFactory> {
 protected:
  void SetUp() override {
    if (const std::string why = GetParam().unavailable(); !why.empty()) GTEST_SKIP() << why;
    device_ = GetParam().make();
  }
  void TearDown() override {
    if (device_) {
      EXPECT_EQ(nuvec_test::invariant_violations(device_->memory()), "");
    }
  }
  nuvec::Device& dev() { return *device_; }
  // The reservations an arena makes for buffers of these lengths: one for
  // blocks below its size classes' page, one for the rest.
  std::uint64_t arena_reservations(std::initializer_list<std::size_t> lens) const {
    bool small = false, pages = false;
    for (std::size_t len : lens) (block(len) < GetParam().class_page ? small : pages) = true;
    return std::uint64_t{small} + std::uint64_t{pages};
  }
  std::size_t block(std::size_t len) const { return GetParam().block_size(len); }
  std::vector<std::byte> read(const nuvec::Buffer& b) const { return GetParam().read(b); }
  MemoryStats stats() const { return device_->memory(); }

  const std::size_t page = nuvec::page_size();
  std::unique_ptr<nuvec::Device> device_;
};

INSTANTIATE_TEST_SUITE_P(Devices, DeviceContract,
                         ::testing::Values(cpu_factory(), cpu_blocks_factory(), committing_factory(), cuda_factory(),
                                           cuda_blocks_factory()),
                         [](const auto& info) { return info.param.name; });

TEST_P(DeviceContract, StartsEmptyWithDefaultLimits) {
  const MemoryStats s = stats();
  EXPECT_EQ(s.active, 0u);
  EXPECT_EQ(s.peak, 0u);
  EXPECT_EQ(s.active_with_mapped, 0u);
  EXPECT_EQ(s.peak_with_mapped, 0u);
  EXPECT_EQ(s.cache, 0u);
  EXPECT_EQ(s.system_allocations, 0u);
  EXPECT_EQ(s.wired, 0u);
  EXPECT_EQ(s.mapped, 0u);
  EXPECT_EQ(s.wired_mapped, 0u);
  EXPECT_EQ(s.memory_limit, GetParam().default_memory_limit());
  EXPECT_GT(s.memory_limit, 0u);
  EXPECT_EQ(s.cache_limit, s.memory_limit);
  EXPECT_EQ(s.wired_limit, GetParam().default_wired_limit) << "nothing is wired by default";
}

TEST_P(DeviceContract, BufferFromCopiesAndCounts) {
  const auto bytes = nuvec_test::random_bytes(3 * page + 5, 13);
  nuvec::Buffer b = dev().buffer_from(bytes);
  ASSERT_EQ(b.size(), bytes.size());
  EXPECT_EQ(read(b), bytes);
  EXPECT_EQ(stats().active, block(bytes.size()));
  EXPECT_EQ(b.device(), &dev());
  nuvec::Buffer none = dev().buffer_from({});
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(stats().active, block(bytes.size()));
  nuvec::Buffer zero = dev().new_buffer(0);
  EXPECT_TRUE(zero.empty());
  EXPECT_EQ(stats().system_allocations, 1u);
}

// Device::read_file: the loaders' read path on every device (the CPU's
// positioned reads, a GPU's staging); a range past the file's end or the
// buffer's is refused before anything is allocated.
TEST_P(DeviceContract, ReadFilePlacesEachRangeAndRefusesWithoutChange) {
  TempFile file(2 * page + 300, 17);
  const int fd = ::open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::vector<nuvec::FileRead> reads = {{page + 7, 100, 0}, {0, 50, 256}, {2 * page, 300, 512}};
  nuvec::Buffer b = dev().read_file(fd, 1000, reads);
  ASSERT_EQ(b.size(), 1000u);
  EXPECT_EQ(stats().active, block(1000));
  const std::vector<std::byte> got = read(b);
  const std::vector<std::byte>& want = file.contents();
  for (const nuvec::FileRead& r : reads) {
    EXPECT_TRUE(std::equal(want.begin() + static_cast<std::ptrdiff_t>(r.file_offset),
                           want.begin() + static_cast<std::ptrdiff_t>(r.file_offset + r.length),
                           got.begin() + static_cast<std::ptrdiff_t>(r.buffer_offset)))
        << "range at byte " << r.file_offset;
  }
  const MemoryStats before = stats();
  const std::vector<nuvec::FileRead> past_end = {{2 * page + 200, 101, 0}};
  EXPECT_THROW(dev().read_file(fd, 1000, past_end), nuvec::IoError);
  const std::vector<nuvec::FileRead> past_buffer = {{0, 100, 950}};
  EXPECT_THROW(dev().read_file(fd, 1000, past_buffer), nuvec::InvalidArgument);
  EXPECT_EQ(stats(), before);
  ::close(fd);
}

TEST_P(DeviceContract, ExactFiguresAfterEachStep) {
  MemoryStats want = stats();

  // Allocate 1000 B: counted at its size class (1024 on the CPU).
  const std::size_t small = block(1000);
  nuvec::Buffer a = dev().new_buffer(1000);
  EXPECT_EQ(a.size(), 1000u);
  EXPECT_EQ(a.capacity(), small);
  want.active = want.peak = want.active_with_mapped = want.peak_with_mapped = small;
  want.system_allocations = 1;
  EXPECT_EQ(stats(), want);

  // Allocate a page + 1: two pages on the CPU. (In an arena, blocks of a
  // page of its size classes and more come from reservations of their own.)
  const std::size_t big = block(page + 1);
  nuvec::Buffer b = dev().new_buffer(page + 1);
  std::byte* const big_address = b.data();
  EXPECT_EQ(b.capacity(), big);
  want.active = want.peak = want.active_with_mapped = want.peak_with_mapped = small + big;
  want.system_allocations = 2;  // two misses, whatever the policy
  EXPECT_EQ(stats(), want);
  // Beside the statistics: the reservations the misses came from.
  EXPECT_EQ(dev().counters().reservations, GetParam().arena ? arena_reservations({1000, page + 1}) : 0u);
  EXPECT_EQ(dev().counters().system_allocations, want.system_allocations);

  // Free: the block moves to the cache; peaks stay.
  b.reset();
  want.active = want.active_with_mapped = small;
  want.cache = big;
  EXPECT_EQ(stats(), want);

  // reset_peak: the current values, not zero.
  dev().reset_peak();
  want.peak = want.peak_with_mapped = small;
  EXPECT_EQ(stats(), want);

  // The same size again: the cached block, no system allocation.
  b = dev().new_buffer(page + 1);
  EXPECT_EQ(b.data(), big_address);
  want.active = want.peak = want.active_with_mapped = want.peak_with_mapped = small + big;
  want.cache = 0;
  EXPECT_EQ(stats(), want);
  b.reset();
  want.active = want.active_with_mapped = small;
  want.cache = big;
  EXPECT_EQ(stats(), want);

  // clear_cache: cache 0, the count of system allocations stays.
  dev().clear_cache();
  want.cache = 0;
  EXPECT_EQ(stats(), want);

  // Map a file: mapped is its length rounded up to pages; peak_with_mapped
  // follows, peak does not.
  TempFile file(3 * page + 100, 1);
  const std::size_t m = nuvec::mapping_size(file.size());
  ASSERT_EQ(m, 4 * page);
  nuvec::MappedFile f = dev().map_file(file.path());
  EXPECT_EQ(f.mapped_bytes(), m);
  want.mapped = m;
  want.active_with_mapped = small + m;
  want.peak_with_mapped = small + m;
  // Wired if it fits under the wired limit (a GPU's default has room for it).
  const std::size_t wired_when_mapped = m <= want.wired_limit ? m : 0;
  want.wired = want.wired_mapped = wired_when_mapped;
  EXPECT_EQ(stats(), want);

  // A change of active moves peak_with_mapped too. (An arena takes it from
  // address space it already has: no system allocation.)
  const std::size_t five = block(5 * page);
  nuvec::Buffer c = dev().new_buffer(5 * page);
  want.active = small + five;
  want.peak = small + five;
  want.active_with_mapped = want.peak_with_mapped = small + five + m;
  want.system_allocations = 3;
  EXPECT_EQ(stats(), want);
  EXPECT_EQ(dev().counters().reservations, GetParam().arena ? arena_reservations({1000, page + 1, 5 * page}) : 0u);

  // Unmap: mapped back to 0, the peak stays.
  f.reset();
  want.mapped = 0;
  want.wired = want.wired_mapped = 0;
  want.active_with_mapped = small + five;
  EXPECT_EQ(stats(), want);

  c.reset();
  want.active = want.active_with_mapped = small;
  want.cache = five;
  EXPECT_EQ(stats(), want);

  dev().reset_peak();
  want.peak = want.peak_with_mapped = small;
  EXPECT_EQ(stats(), want);

  // A mapping alone moves peak_with_mapped.
  f = dev().map_file(file.path());
  want.mapped = m;
  want.wired = want.wired_mapped = wired_when_mapped;
  want.active_with_mapped = want.peak_with_mapped = small + m;
  EXPECT_EQ(stats(), want);
  f.reset();
  want.mapped = 0;
  want.wired = want.wired_mapped = 0;
  want.active_with_mapped = small;
  EXPECT_EQ(stats(), want);
}

TEST_P(DeviceContract, ActiveWithMappedIsAlwaysActivePlusMapped) {
  TempFile file(2 * page + 1, 2);
  std::vector<nuvec::Buffer> buffers;
  std::vector<nuvec::MappedFile> maps;
  for (int i = 0; i < 50; ++i) {
    if (i % 3 == 0) maps.push_back(dev().map_file(file.path()));
    if (i % 7 == 6 && !maps.empty()) maps.erase(maps.begin());
    buffers.push_back(dev().new_buffer(static_cast<std::size_t>(i) * 977 + 1));
    if (i % 2 == 1) buffers.erase(buffers.begin());
    const MemoryStats s = stats();
    ASSERT_EQ(s.active_with_mapped, s.active + s.mapped) << s;
    ASSERT_EQ(s.mapped, maps.size() * nuvec::mapping_size(file.size())) << s;
    ASSERT_EQ(nuvec_test::invariant_violations(s), "") << s;
  }
}

TEST_P(DeviceContract, SteadyStateMakesNoNewSystemAllocations) {
  const std::vector<std::size_t> sizes = {1,        100,      1000,       3000,   page,
                                          page + 1, 3 * page, 100000, std::size_t{1} << 20};
  std::uint64_t after_first_round = 0;
  for (int round = 0; round < 10000; ++round) {
    std::vector<nuvec::Buffer> live;
    live.reserve(sizes.size());
    for (std::size_t len : sizes) live.push_back(dev().new_buffer(len));
    if (round % 2 == 0) {
      live.clear();
    } else {
      while (!live.empty()) live.pop_back();
    }
    const MemoryStats s = stats();
    if (round == 0) {
      after_first_round = s.system_allocations;
      // One miss per block, whatever the policy; in an arena they came
      // from one reservation for blocks below a page and one for the rest.
      EXPECT_EQ(after_first_round, sizes.size());
      EXPECT_EQ(dev().counters().reservations,
                GetParam().arena ? arena_reservations({1, 100, 1000, 3000, page, page + 1, 3 * page, 100000,
                                                       std::size_t{1} << 20})
                                 : 0u);
    }
    ASSERT_EQ(s.system_allocations, after_first_round) << "round " << round;
    ASSERT_EQ(s.active, 0u);
  }
}

TEST_P(DeviceContract, MappingReadsTheFile) {
  TempFile file(5 * page + 321, 3);
  nuvec::MappedFile f = dev().map_file(file.path());
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f.path().string(), file.path().string());
  EXPECT_EQ(f.file_size(), file.size());
  EXPECT_EQ(f.mapped_bytes(), nuvec::mapping_size(file.size()));
  EXPECT_TRUE(f.share()->whole_file());
  const auto bytes = f.bytes();
  ASSERT_EQ(bytes.size(), file.size());
  EXPECT_EQ(std::memcmp(bytes.data(), file.contents().data(), file.size()), 0);
  const auto middle = f.range(page - 10, 20);
  ASSERT_EQ(middle.size(), 20u);
  EXPECT_EQ(std::memcmp(middle.data(), file.contents().data() + page - 10, 20), 0);
}

TEST_P(DeviceContract, EmptyFileMapsToNothing) {
  TempFile file(0, 4);
  nuvec::MappedFile f = dev().map_file(file.path());
  EXPECT_EQ(f.file_size(), 0u);
  EXPECT_EQ(f.mapped_bytes(), 0u);
  EXPECT_TRUE(f.bytes().empty());
  EXPECT_EQ(stats().mapped, 0u);
}

TEST_P(DeviceContract, MutableBytesRaisesReadOnly) {
  TempFile file(page, 5);
  nuvec::MappedFile f = dev().map_file(file.path());
  EXPECT_THROW(f.mutable_bytes(), nuvec::ReadOnly);
  EXPECT_THROW(f.share()->mutable_bytes(), nuvec::ReadOnly);
}

TEST_P(DeviceContract, WriteThroughMappingDiesWithSigsegv) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempFile file(2 * page, 6);
  nuvec::MappedFile f = dev().map_file(file.path());
  auto* target = const_cast<std::byte*>(f.bytes().data() + page + 1);
  EXPECT_EXIT(
      {
        std::filesystem::remove(file.path());  // this process dies: clean up first
        std::signal(SIGSEGV, SIG_DFL);         // past a sanitizer's handler
        *static_cast<volatile std::byte*>(target) = std::byte{0x5a};
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  // The file is untouched.
  EXPECT_EQ(f.bytes()[page + 1], file.contents()[page + 1]);
}

TEST_P(DeviceContract, UnmappingRestoresMapped) {
  TempFile one(3 * page, 7), two(page + 1, 8);
  nuvec::MappedFile a = dev().map_file(one.path());
  const MemoryStats before = stats();
  nuvec::MappedFile b = dev().map_file(two.path());
  EXPECT_EQ(stats().mapped, before.mapped + 2 * page);
  b.reset();
  EXPECT_EQ(stats().mapped, before.mapped);
  EXPECT_EQ(stats().active_with_mapped, before.active_with_mapped);
  a.reset();
  EXPECT_EQ(stats().mapped, 0u);
}

TEST_P(DeviceContract, ViewKeepsMappingAlive) {
  TempFile file(4 * page + 3, 9);
  nuvec::MappedFile f = dev().map_file(file.path());
  std::shared_ptr<const nuvec::Mapping> view = f.share();
  f.reset();
  EXPECT_TRUE(f.empty());
  EXPECT_EQ(stats().mapped, nuvec::mapping_size(file.size()));
  const auto bytes = view->bytes();
  ASSERT_EQ(bytes.size(), file.size());
  EXPECT_EQ(std::memcmp(bytes.data(), file.contents().data(), file.size()), 0);
  view.reset();
  EXPECT_EQ(stats().mapped, 0u);
}

TEST_P(DeviceContract, MapRangesCountsPageRoundedMergedRanges) {
  TempFile file(10 * page + 100, 10);
  const std::vector<nuvec::FileRange> ranges = {
      {10, 20},                     // page 0
      {3 * page + 5, page},         // pages 3-4
      {4 * page, 10},               // page 4: overlaps the last
      {5 * page, page},             // page 5: touches pages 3-4
      {10 * page + 50, 50},         // the partial last page
  };
  nuvec::MappedFile f = dev().map_ranges(file.path(), ranges);
  EXPECT_EQ(f.mapped_bytes(), 5 * page);  // 0, 3-5, 10
  EXPECT_EQ(stats().mapped, 5 * page);
  EXPECT_EQ(stats().active_with_mapped, stats().active + 5 * page);
  EXPECT_FALSE(f.share()->whole_file());
  EXPECT_THROW(f.bytes(), nuvec::InvalidArgument);
  for (const nuvec::FileRange& r : ranges) {
    const auto bytes = f.range(r.offset, r.length);
    ASSERT_EQ(bytes.size(), r.length);
    EXPECT_EQ(std::memcmp(bytes.data(), file.contents().data() + r.offset, r.length), 0);
  }
  // Anything inside one merged piece reads too, across the touching seam.
  const auto seam = f.range(3 * page, 3 * page);
  EXPECT_EQ(std::memcmp(seam.data(), file.contents().data() + 3 * page, 3 * page), 0);
  // Pages that are not mapped, or past the file, cannot be read.
  EXPECT_THROW(f.range(page, 10), nuvec::InvalidArgument);
  EXPECT_THROW(f.range(page - 5, 10), nuvec::InvalidArgument);
  EXPECT_THROW(f.range(10 * page + 90, 20), nuvec::InvalidArgument);
  f.reset();
  EXPECT_EQ(stats().mapped, 0u);
}

TEST_P(DeviceContract, MapRangesOutsideTheFileIsInvalid) {
  TempFile file(2 * page + 10, 11);
  const MemoryStats before = stats();
  const std::uint64_t size = file.size();
  const std::vector<std::vector<nuvec::FileRange>> bad = {
      {{size - 5, 6}},
      {{size, 1}},
      {{0, 10}, {size + page, 1}},
      {{0, 0}},
      {{std::numeric_limits<std::uint64_t>::max() - 1, 4}},
  };
  for (const auto& ranges : bad) {
    EXPECT_THROW(dev().map_ranges(file.path(), ranges), nuvec::InvalidArgument)
        << ranges.back().offset << "+" << ranges.back().length;
    EXPECT_EQ(stats(), before);
  }
  // The very end of the file is inside it.
  nuvec::MappedFile f = dev().map_ranges(file.path(), std::vector<nuvec::FileRange>{{size - 5, 5}});
  EXPECT_EQ(f.mapped_bytes(), page);
}

TEST_P(DeviceContract, SettersReturnThePreviousValue) {
  const MemoryStats s = stats();
  EXPECT_EQ(dev().set_memory_limit(512 * kMiB), s.memory_limit);
  EXPECT_EQ(dev().set_memory_limit(256 * kMiB), 512 * kMiB);
  EXPECT_EQ(stats().memory_limit, 256 * kMiB);

  EXPECT_EQ(dev().set_cache_limit(64 * kMiB), s.cache_limit);
  EXPECT_EQ(dev().set_cache_limit(32 * kMiB), 64 * kMiB);
  EXPECT_EQ(stats().cache_limit, 32 * kMiB);

  EXPECT_EQ(dev().set_wired_limit(kMiB), s.wired_limit);
  EXPECT_EQ(dev().set_wired_limit(2 * kMiB), kMiB);
  EXPECT_EQ(stats().wired_limit, 2 * kMiB);
  EXPECT_EQ(dev().set_wired_limit(0), 2 * kMiB);
}

TEST_P(DeviceContract, MemoryLimitBelowActivePlusMappedIsInvalid) {
  TempFile file(3 * page, 12);
  nuvec::Buffer b = dev().new_buffer(4 * page);
  nuvec::MappedFile f = dev().map_file(file.path());
  const MemoryStats before = stats();
  const std::size_t used = before.active + before.mapped;
  EXPECT_THROW(dev().set_memory_limit(used - 1), nuvec::InvalidArgument);
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(dev().set_memory_limit(used), before.memory_limit);
  EXPECT_EQ(stats().memory_limit, used);
}

TEST_P(DeviceContract, ClearCacheAndCacheLimitTrim) {
  // Live buffers between them, so that an arena does not merge them.
  std::vector<nuvec::Buffer> buffers, between;
  for (int i = 1; i <= 4; ++i) {
    buffers.push_back(dev().new_buffer(static_cast<std::size_t>(i) * page + 1));
    between.push_back(dev().new_buffer(page));
  }
  for (nuvec::Buffer& b : buffers) b.reset();  // oldest first
  const std::size_t cached = block(page + 1) + block(2 * page + 1) + block(3 * page + 1) + block(4 * page + 1);
  EXPECT_EQ(stats().cache, cached);
  // Trimming drops the least recently freed blocks first: the vector freed
  // them in order, so the largest (freed last) stays.
  dev().set_cache_limit(block(4 * page + 1));
  EXPECT_EQ(stats().cache, block(4 * page + 1));
  dev().clear_cache();
  EXPECT_EQ(stats().cache, 0u);
}

// A trim gives back only the excess, from the least recently freed memory:
// an arena releases the high part of its oldest extent (a merged one
// included); whole blocks cannot be cut, so the oldest goes whole.
TEST_P(DeviceContract, CacheLimitTrimsOnlyTheExcessOldestFirst) {
  // a and b are neighbours: freed, an arena merges them into one extent.
  nuvec::Buffer a = dev().new_buffer(3 * page), b = dev().new_buffer(4 * page), after = dev().new_buffer(page);
  std::byte* const at_a = a.data();
  std::byte* const at_b = b.data();
  a.reset();  // the oldest
  b.reset();
  MemoryStats want = stats();
  ASSERT_EQ(want.cache, block(3 * page) + block(4 * page));
  ASSERT_EQ(want.cache, 7 * page);
  dev().set_cache_limit(5 * page);
  want.cache_limit = 5 * page;
  want.cache = GetParam().arena ? 5 * page : block(4 * page);
  EXPECT_EQ(stats(), want) << (GetParam().arena ? "the merged extent's high two pages went back, not all seven"
                                                : "a went back whole, b stayed");
  // What stayed serves without the system.
  nuvec::Buffer again = dev().new_buffer(GetParam().arena ? 5 * page : 4 * page);
  EXPECT_EQ(again.data(), GetParam().arena ? at_a : at_b);
  EXPECT_EQ(stats().system_allocations, want.system_allocations);
  EXPECT_EQ(stats().cache, 0u);
}

// An arena cuts in its size classes' steps: a page of them (4 KiB on the
// CPU, a 2 MiB granule for CUDA's classes) above blocks of a page. The
// excess is rounded up, so the cache ends below the limit by less than a
// step; whole blocks go whole.
TEST_P(DeviceContract, ATrimRoundsTheExcessUpToTheSizeClassesStep) {
  const std::size_t step = GetParam().class_page;
  nuvec::Buffer a = dev().new_buffer(3 * step), b = dev().new_buffer(4 * step), after = dev().new_buffer(step);
  std::byte* const at_a = a.data();
  std::byte* const at_b = b.data();
  a.reset();
  b.reset();
  ASSERT_EQ(stats().cache, 7 * step);
  dev().set_cache_limit(6 * step - 1);  // one step and a byte over
  EXPECT_EQ(stats().cache, GetParam().arena ? 5 * step : 4 * step)
      << (GetParam().arena ? "two steps cut off the merged extent" : "a went whole");
  nuvec::Buffer again = dev().new_buffer(GetParam().arena ? 5 * step : 4 * step);
  EXPECT_EQ(again.data(), GetParam().arena ? at_a : at_b);
  EXPECT_EQ(stats().cache, 0u);
}

// The cache yields to live data exactly: set_memory_limit and a miss
// release only what would pass the limit, least recently freed first.
TEST_P(DeviceContract, CacheYieldsOnlyTheExcessOldestFirst) {
  TempFile file(3 * page, 23);
  nuvec::MappedFile f = dev().map_file(file.path());
  // Live buffers between them, so that an arena does not merge them.
  nuvec::Buffer a = dev().new_buffer(4 * page), guard = dev().new_buffer(page);
  nuvec::Buffer b = dev().new_buffer(2 * page), guard2 = dev().new_buffer(page);
  std::byte* const at_a = a.data();
  a.reset();  // the oldest
  b.reset();
  MemoryStats want = stats();
  ASSERT_EQ(want.cache, 6 * page);
  ASSERT_EQ(want.mapped, 3 * page);
  // Room for four cached pages beside what is live and mapped.
  const std::size_t limit = want.active + want.mapped + 4 * page;
  dev().set_memory_limit(limit);
  want.memory_limit = limit;
  want.cache = GetParam().arena ? 4 * page : 2 * page;
  EXPECT_EQ(stats(), want) << (GetParam().arena ? "a's high two pages went back; its low two and b stayed"
                                                : "a went back whole: a block cannot be cut");
  // A miss of three pages (no cached extent or block fits): one page of
  // cache may stay beside it.
  nuvec::Buffer c = dev().new_buffer(3 * page);
  want.active += 3 * page;
  want.active_with_mapped += 3 * page;
  want.peak = std::max(want.peak, want.active);
  want.peak_with_mapped = std::max(want.peak_with_mapped, want.active_with_mapped);
  want.system_allocations += 1;
  want.cache = GetParam().arena ? page : 0;
  EXPECT_EQ(stats(), want) << (GetParam().arena ? "a's low part went, then b's high page" : "b went whole");
  if (GetParam().arena) {
    EXPECT_EQ(c.data(), at_a) << "a's pages, a hole again, serve the miss";
  }
}

// peak_held (not a MemoryStats field: the PyTorch plugin's "reserved") is
// the highest active + cache, whatever moves bytes between the two.
TEST_P(DeviceContract, PeakHeldIsTheHighestActivePlusCache) {
  const auto peak_held = [&] { return dev().counters().peak_held; };
  const auto held = [&] { return stats().active + stats().cache; };
  EXPECT_EQ(peak_held(), 0u);
  nuvec::Buffer a = dev().new_buffer(3 * page);
  nuvec::Buffer b = dev().new_buffer(page + 1);
  const std::size_t two = held();
  EXPECT_EQ(two, block(3 * page) + block(page + 1));
  EXPECT_EQ(peak_held(), two);
  a.reset();  // active falls, cache rises: held stays
  EXPECT_EQ(held(), two);
  EXPECT_EQ(peak_held(), two);
  nuvec::Buffer c = dev().new_buffer(3 * page);  // a hit: still nothing new held
  EXPECT_EQ(held(), two);
  EXPECT_EQ(peak_held(), two);
  b.reset();
  dev().clear_cache();
  EXPECT_EQ(held(), block(3 * page));
  EXPECT_EQ(peak_held(), two);  // a peak does not fall with what is held
  dev().reset_peak();
  EXPECT_EQ(peak_held(), held());
  nuvec::Buffer d = dev().new_buffer(8 * page);  // a miss: held grows, and its peak
  EXPECT_EQ(peak_held(), held());
  EXPECT_GT(peak_held(), two);
}

TEST_P(DeviceContract, BoundedBestFitSmallestThenMostRecentlyFreed) {
  if (GetParam().arena) GTEST_SKIP() << "an arena splits and merges: its best fit is tested in arena_test.cc";
  // Sizes in whole pages of the size classes, some above 32 MiB; the blocks
  // are never touched.
  const std::size_t mib = kMiB;
  const std::size_t page = GetParam().class_page;
  auto cached_at = [&](std::vector<std::size_t> lens) {
    std::vector<nuvec::Buffer> buffers;
    std::vector<std::byte*> addresses;
    for (std::size_t len : lens) buffers.push_back(dev().new_buffer(len));
    for (nuvec::Buffer& b : buffers) {
      addresses.push_back(b.data());
      b.reset();  // freed in order: the last is the most recently freed
    }
    return addresses;
  };
  for (std::size_t base : {8 * page, 40 * mib}) {
    SCOPED_TRACE(base);
    dev().clear_cache();
    // Two equal blocks, one a page larger, one three pages larger.
    const auto at = cached_at({base, base, base + page, base + 3 * page});
    const std::uint64_t system = stats().system_allocations;
    // Equal sizes: the most recently freed.
    nuvec::Buffer a = dev().new_buffer(base);
    EXPECT_EQ(a.data(), at[1]);
    // Smallest that fits: the other equal one, not the larger ones.
    nuvec::Buffer b = dev().new_buffer(base - page + 1);
    EXPECT_EQ(b.data(), at[0]);
    EXPECT_EQ(b.capacity(), base) << "a live buffer counts its block";
    // base + page is below base + 2 pages: it serves a request of base.
    nuvec::Buffer c = dev().new_buffer(base);
    EXPECT_EQ(c.data(), at[2]);
    EXPECT_EQ(c.capacity(), base + page);
    // base + 3 pages is not below base + 2 pages: a miss.
    nuvec::Buffer d = dev().new_buffer(base);
    EXPECT_NE(d.data(), at[3]);
    EXPECT_EQ(stats().system_allocations, system + 1);
    EXPECT_EQ(stats().cache, base + 3 * page);
    EXPECT_EQ(stats().active, 3 * base + page + base);
  }
  // Below a page the bound is 2·s: a 512-byte block serves 300 bytes, a
  // 1024-byte block does not serve 512.
  dev().clear_cache();
  const auto small = cached_at({300, 1000});
  nuvec::Buffer e = dev().new_buffer(512);
  EXPECT_EQ(e.data(), small[0]);
  nuvec::Buffer f = dev().new_buffer(512);
  EXPECT_NE(f.data(), small[1]);
  EXPECT_EQ(stats().cache, block(1000));
}

}  // namespace
