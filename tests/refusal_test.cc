// Refusals: over the memory limit, over what may be locked, and every system
// call failing in turn. Each is a clear error, changes no statistic and
// leaks nothing. Every test runs on the CPU device as it comes (an arena of
// reservations) and without reservations (each block its own allocation);
// the few about one policy's system calls skip on the other.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/nuvec.h"
#include "support/counting_system_calls.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"
#include "support/text.h"

namespace {

using nuvec::MemoryStats;
using nuvec_test::CountingSystemCalls;
using nuvec_test::TempFile;
using Call = CountingSystemCalls::Call;

using nuvec_test::kMiB;

using nuvec_test::contains;

// A device over counting system calls; TearDown checks that everything it
// took from the system went back. The parameter: with reservations (arena).
class Refusal : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    calls_ = std::make_shared<CountingSystemCalls>();
    device_ = std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(calls_, {.reservations = arena()}), false);
  }
  bool arena() const { return GetParam(); }
  void TearDown() override {
    if (device_) {
      EXPECT_EQ(nuvec_test::invariant_violations(device_->memory()), "");
    }
    device_.reset();
    calls_->heal();
    calls_->unmap_leftovers();
    const CountingSystemCalls::Totals t = calls_->totals();
    EXPECT_EQ(t.blocks, 0u) << "buffers leaked";
    EXPECT_EQ(t.block_bytes, 0u);
    EXPECT_EQ(t.file_maps, 0u) << "file mappings leaked";
    EXPECT_EQ(t.open_fds, 0u) << "file descriptors leaked";
    EXPECT_EQ(t.locked_bytes, 0u) << "memory left locked";
    EXPECT_EQ(t.unknown_releases, 0u);
    EXPECT_EQ(t.freed_while_locked, 0u);
  }

  nuvec::Device& dev() { return *device_; }
  MemoryStats stats() const { return device_->memory(); }

  const std::size_t page = nuvec::page_size();
  std::shared_ptr<CountingSystemCalls> calls_;
  std::unique_ptr<nuvec::Device> device_;
};

INSTANTIATE_TEST_SUITE_P(Policies, Refusal, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "arena" : "blocks"; });

#define ONLY_WITHOUT_RESERVATIONS() \
  if (arena()) GTEST_SKIP() << "about blocks of their own; the arena's counterpart is below"
#define ONLY_WITH_RESERVATIONS() \
  if (!arena()) GTEST_SKIP() << "about the arena; the counterpart without reservations is above"

// ---------------------------------------------------------------------------
// The memory limit.

TEST_P(Refusal, AllocationOverTheLimitIsOutOfMemoryAndChangesNothing) {
  TempFile file(5 * page, 1);
  dev().set_memory_limit(1536 * 1024);
  nuvec::Buffer cached = dev().new_buffer(2 * page);
  cached.reset();  // something in the cache
  nuvec::Buffer live = dev().new_buffer(3 * page);
  nuvec::MappedFile mapped = dev().map_file(file.path());
  const MemoryStats before = stats();
  const std::size_t request = 1536 * 1024;  // a whole number of pages

  try {
    dev().new_buffer(request);
    FAIL() << "allocation over the limit succeeded";
  } catch (const nuvec::OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.requested(), request);
    EXPECT_EQ(e.stats(), before);
    EXPECT_EQ(e.stats(), stats());
    EXPECT_TRUE(contains(what, nuvec::format_bytes(request))) << what;
    EXPECT_TRUE(contains(what, nuvec::format_bytes(before.active))) << what;
    EXPECT_TRUE(contains(what, nuvec::format_bytes(before.mapped))) << what;
    EXPECT_TRUE(contains(what, nuvec::format_bytes(before.memory_limit))) << what;
    EXPECT_TRUE(contains(what, "NUVEC_MEMORY_LIMIT")) << what;
    EXPECT_TRUE(contains(what, "set_memory_limit")) << what;
  }
  EXPECT_EQ(stats(), before);
  EXPECT_THROW(dev().new_buffer(request), std::bad_alloc);
  EXPECT_EQ(stats(), before);
}

TEST_P(Refusal, MappingOverTheLimitIsOutOfMemoryAndChangesNothing) {
  TempFile small(3 * page, 2), large(300 * page + 5, 3);
  dev().set_memory_limit(kMiB);
  nuvec::Buffer cached = dev().new_buffer(6 * page);
  cached.reset();
  nuvec::Buffer live = dev().new_buffer(2 * page);
  nuvec::MappedFile mapped = dev().map_file(small.path());
  const MemoryStats before = stats();
  const std::size_t m = nuvec::mapping_size(large.size());

  try {
    dev().map_file(large.path());
    FAIL() << "mapping over the limit succeeded";
  } catch (const nuvec::OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.requested(), m);
    EXPECT_EQ(e.stats(), before);
    EXPECT_EQ(e.stats(), stats());
    EXPECT_TRUE(contains(what, large.path().filename().string())) << what;
    EXPECT_TRUE(contains(what, nuvec::format_bytes(m))) << what;
    EXPECT_TRUE(contains(what, nuvec::format_bytes(before.active))) << what;
    EXPECT_TRUE(contains(what, nuvec::format_bytes(before.mapped))) << what;
    EXPECT_TRUE(contains(what, nuvec::format_bytes(before.memory_limit))) << what;
    EXPECT_TRUE(contains(what, "NUVEC_MEMORY_LIMIT")) << what;
    EXPECT_TRUE(contains(what, "set_memory_limit")) << what;
  }
  EXPECT_EQ(stats(), before);
  EXPECT_THROW(dev().map_file(large.path()), std::bad_alloc);
  const std::vector<nuvec::FileRange> ranges = {{0, 150 * page}, {150 * page, 150 * page}};
  EXPECT_THROW(dev().map_ranges(large.path(), ranges), nuvec::OutOfMemory);
  EXPECT_EQ(stats(), before);
  // A smaller piece of the same file fits.
  const std::vector<nuvec::FileRange> piece = {{0, page}};
  EXPECT_EQ(dev().map_ranges(large.path(), piece).mapped_bytes(), page);
}

TEST_P(Refusal, OverflowingSizeIsOutOfMemory) {
  const MemoryStats before = stats();
  EXPECT_THROW(dev().new_buffer(std::numeric_limits<std::size_t>::max()), nuvec::OutOfMemory);
  EXPECT_THROW(dev().new_buffer(std::numeric_limits<std::size_t>::max() - page + 2),
               nuvec::OutOfMemory);
  EXPECT_EQ(stats(), before);
}

// ---------------------------------------------------------------------------
// What may be locked.

TEST_P(Refusal, WiredLimitAbovePhysicalMemoryIsInvalid) {
  dev().set_wired_limit(kMiB);
  const MemoryStats before = stats();
  EXPECT_THROW(dev().set_wired_limit(nuvec::physical_memory() + 1), nuvec::InvalidArgument);
  EXPECT_THROW(dev().set_wired_limit(std::numeric_limits<std::size_t>::max()),
               nuvec::InvalidArgument);
  EXPECT_EQ(stats(), before);
}

TEST(RefusalWithoutPrivilege, WiredLimitAboveMemlockRlimitIsInvalid) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_MEMLOCK, &limit), 0);
  if (limit.rlim_cur == RLIM_INFINITY) GTEST_SKIP() << "RLIMIT_MEMLOCK is unlimited";
  const std::size_t page = nuvec::page_size();
  // In a child: drop root (and with it CAP_IPC_LOCK), then ask for more than
  // the rlimit.
  EXPECT_EXIT(
      {
        if (::geteuid() == 0 && ::setuid(65534) != 0) {
          std::perror("setuid");
          std::_Exit(2);
        }
        rlimit rl{};
        ::getrlimit(RLIMIT_MEMLOCK, &rl);
        nuvec::Device dev(nuvec::cpu::make_backend(), false);
        try {
          dev.set_wired_limit(rl.rlim_cur + page);
          std::fprintf(stderr, "set_wired_limit(rlimit + page) was accepted\n");
          std::_Exit(3);
        } catch (const nuvec::InvalidArgument& e) {
          std::fprintf(stderr, "refused: %s\n", e.what());
        }
        if (dev.memory().wired_limit != 0) std::_Exit(4);
        try {
          dev.set_wired_limit(rl.rlim_cur / 2);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "set_wired_limit(rlimit / 2) refused: %s\n", e.what());
          std::_Exit(5);
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "refused");
}

// ---------------------------------------------------------------------------
// System calls that fail.

TEST_P(Refusal, AlignedAllocFailureIsOutOfMemory) {
  ONLY_WITHOUT_RESERVATIONS();
  const MemoryStats before = stats();
  calls_->fail(Call::aligned_alloc, ENOMEM);
  try {
    dev().new_buffer(100);
    FAIL() << "allocation succeeded";
  } catch (const nuvec::OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, std::strerror(ENOMEM)) || contains(what, "ENOMEM")) << what;
    EXPECT_EQ(e.stats(), before);
  }
  EXPECT_EQ(calls_->injected(Call::aligned_alloc), 1u);
  EXPECT_EQ(stats(), before);
  calls_->heal();
  EXPECT_EQ(dev().new_buffer(100).capacity(), 256u);
}

TEST_P(Refusal, AnonymousMmapFailureIsOutOfMemory) {
  // Without reservations the block's own mapping; with, the reservation
  // (tried at smaller sizes down to the request before giving up).
  for (std::size_t len : {4 * page, std::size_t{100}}) {
    SCOPED_TRACE(len);
    if (len < page && !arena()) continue;  // heap memory, not a mapping
    const MemoryStats before = stats();
    calls_->fail(Call::mmap_anonymous, ENOMEM);
    try {
      dev().new_buffer(len);
      FAIL() << "allocation succeeded";
    } catch (const nuvec::OutOfMemory& e) {
      const std::string what = e.what();
      EXPECT_TRUE(contains(what, std::strerror(ENOMEM)) || contains(what, "ENOMEM")) << what;
      EXPECT_EQ(e.stats(), before);
    }
    EXPECT_EQ(stats(), before);
    EXPECT_EQ(calls_->totals().blocks, 0u);
    calls_->heal();
  }
  if (arena()) {
    EXPECT_GT(calls_->injected(Call::mmap_anonymous), 2u) << "smaller reservations were tried";
  } else {
    EXPECT_EQ(calls_->injected(Call::mmap_anonymous), 1u);
  }
  EXPECT_EQ(dev().new_buffer(4 * page).capacity(), 4 * page);
}

TEST_P(Refusal, FailedSystemAllocationOnlyKeepsTheCacheItYielded) {
  ONLY_WITHOUT_RESERVATIONS();  // in an arena the yielded cache becomes a hole that serves: ArenaRefusal
  dev().set_memory_limit(10 * page);
  nuvec::Buffer b = dev().new_buffer(6 * page);
  b.reset();
  MemoryStats want = stats();
  ASSERT_EQ(want.cache, 6 * page);
  // 8 pages do not fit beside the cached 6: the cache yields, then the
  // system refuses.
  calls_->fail(Call::mmap_anonymous, ENOMEM);
  EXPECT_THROW(dev().new_buffer(8 * page), nuvec::OutOfMemory);
  want.cache = 0;
  EXPECT_EQ(stats(), want);
}

TEST_P(Refusal, RefusedSystemAllocationReleasesTheCacheAndRetriesOnce) {
  ONLY_WITHOUT_RESERVATIONS();  // the arena's counterparts: Arena.Refused*
  nuvec::Buffer b = dev().new_buffer(6 * page);
  b.reset();
  ASSERT_EQ(stats().cache, 6 * page);
  // Eight pages: the cached six do not serve, the system refuses once; the
  // cache goes back and the second request succeeds.
  calls_->fail(Call::mmap_anonymous, ENOMEM, /*times=*/1);
  nuvec::Buffer c = dev().new_buffer(8 * page);
  EXPECT_EQ(calls_->injected(Call::mmap_anonymous), 1u);
  EXPECT_EQ(stats().cache, 0u);
  EXPECT_EQ(stats().system_allocations, 2u);
  // Refused twice: OutOfMemory, with only the cache released.
  c.reset();
  MemoryStats want = stats();
  ASSERT_EQ(want.cache, 8 * page);
  calls_->fail(Call::mmap_anonymous, ENOMEM);
  EXPECT_THROW(dev().new_buffer(16 * page), nuvec::OutOfMemory);
  want.cache = 0;
  EXPECT_EQ(stats(), want);
}

TEST_P(Refusal, FileMmapFailureIsIoError) {
  TempFile file(3 * page, 4);
  const MemoryStats before = stats();
  calls_->fail(Call::mmap_file, EACCES);
  try {
    dev().map_file(file.path());
    FAIL() << "mapping succeeded";
  } catch (const nuvec::IoError& e) {
    EXPECT_EQ(e.path().string(), file.path().string());
    EXPECT_EQ(e.error_code(), EACCES);
    EXPECT_TRUE(contains(e.what(), file.path().filename().string())) << e.what();
  }
  EXPECT_EQ(calls_->injected(Call::mmap_file), 1u);
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(calls_->totals().open_fds, 0u);
  // A mapping of ranges fails the same way.
  const std::vector<nuvec::FileRange> ranges = {{0, 10}, {2 * page, 10}};
  EXPECT_THROW(dev().map_ranges(file.path(), ranges), nuvec::IoError);
  EXPECT_EQ(stats(), before);
}

TEST_P(Refusal, LaterRegionFailingUndoesTheEarlierOnes) {
  TempFile file(6 * page, 5);
  const std::vector<nuvec::FileRange> ranges = {{0, 10}, {2 * page, 10}, {4 * page, 10}};
  const std::size_t before_probe = calls_->calls(Call::mmap_file);
  dev().map_ranges(file.path(), ranges).reset();
  const std::size_t per_mapping = calls_->calls(Call::mmap_file) - before_probe;
  if (per_mapping < 2) GTEST_SKIP() << "the ranges are mapped with one mmap";
  const MemoryStats before = stats();
  calls_->fail(Call::mmap_file, ENOMEM, -1, /*after=*/1);
  EXPECT_THROW(dev().map_ranges(file.path(), ranges), nuvec::IoError);
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(calls_->totals().file_maps, 0u) << "the first region stayed mapped";
  EXPECT_EQ(calls_->totals().open_fds, 0u);
}

TEST_P(Refusal, OpenFailureIsIoError) {
  TempFile file(page, 6);
  const MemoryStats before = stats();
  calls_->fail(Call::open, EACCES);
  try {
    dev().map_file(file.path());
    FAIL() << "mapping succeeded";
  } catch (const nuvec::IoError& e) {
    EXPECT_EQ(e.path().string(), file.path().string());
    EXPECT_EQ(e.error_code(), EACCES);
  }
  EXPECT_EQ(stats(), before);
}

TEST_P(Refusal, MissingFileIsIoError) {
  const auto path = std::filesystem::temp_directory_path() / "nuvec-test-no-such-file.bin";
  try {
    dev().map_file(path);
    FAIL() << "mapping succeeded";
  } catch (const nuvec::IoError& e) {
    EXPECT_EQ(e.error_code(), ENOENT);
    EXPECT_EQ(e.path().string(), path.string());
  }
  EXPECT_EQ(stats().mapped, 0u);
}

TEST_P(Refusal, FstatFailureIsIoError) {
  TempFile file(page, 7);
  const MemoryStats before = stats();
  calls_->fail(Call::fstat, EIO);
  try {
    dev().map_file(file.path());
    FAIL() << "mapping succeeded";
  } catch (const nuvec::IoError& e) {
    EXPECT_EQ(e.path().string(), file.path().string());
    EXPECT_EQ(e.error_code(), EIO);
  }
  EXPECT_EQ(calls_->injected(Call::fstat), 1u);
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(calls_->totals().open_fds, 0u);
}

TEST_P(Refusal, MlockFailureOnANewBufferIsIoErrorAndUndoesIt) {
  dev().set_wired_limit(kMiB);
  const MemoryStats before = stats();
  calls_->fail(Call::mlock, EAGAIN);
  try {
    dev().new_buffer(4 * page);
    FAIL() << "allocation succeeded";
  } catch (const nuvec::IoError& e) {
    EXPECT_EQ(e.error_code(), EAGAIN);
  }
  EXPECT_EQ(calls_->injected(Call::mlock), 1u);
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(calls_->totals().blocks, 0u);
  calls_->heal();
  nuvec::Buffer b = dev().new_buffer(4 * page);
  EXPECT_EQ(stats().wired, 4 * page);
}

TEST_P(Refusal, MlockFailureOnACacheHitIsIoErrorAndUndoesIt) {
  nuvec::Buffer b = dev().new_buffer(4 * page);  // not wired: the limit is 0
  b.reset();
  dev().set_wired_limit(kMiB);  // cached blocks that are not wired stay so
  const MemoryStats before = stats();
  ASSERT_EQ(before.cache, 4 * page);
  ASSERT_EQ(before.wired, 0u);
  calls_->fail(Call::mlock, ENOMEM);
  EXPECT_THROW(dev().new_buffer(4 * page), nuvec::IoError);
  EXPECT_EQ(stats(), before);
  calls_->heal();
  b = dev().new_buffer(4 * page);
  EXPECT_EQ(stats().cache, 0u);
  EXPECT_EQ(stats().wired, 4 * page);
  EXPECT_EQ(stats().system_allocations, 1u);
}

TEST_P(Refusal, MlockFailureOnAMappingIsIoErrorAndUndoesIt) {
  TempFile file(3 * page + 1, 8);
  dev().set_wired_limit(kMiB);
  const MemoryStats before = stats();
  calls_->fail(Call::mlock, ENOMEM);
  EXPECT_THROW(dev().map_file(file.path()), nuvec::IoError);
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(calls_->totals().file_maps, 0u);
  EXPECT_EQ(calls_->totals().open_fds, 0u);
  calls_->heal();
  nuvec::MappedFile f = dev().map_file(file.path());
  EXPECT_EQ(stats().wired_mapped, 4 * page);
}

TEST_P(Refusal, MlockFailureWhileRaisingTheWiredLimitRestoresIt) {
  nuvec::Buffer waiting = dev().new_buffer(4 * page);
  const MemoryStats before = stats();
  calls_->fail(Call::mlock, ENOMEM);
  EXPECT_THROW(dev().set_wired_limit(kMiB), nuvec::IoError);
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(stats().wired_limit, 0u);
  calls_->heal();
  EXPECT_EQ(dev().set_wired_limit(kMiB), 0u);
  EXPECT_EQ(stats().wired, 4 * page);
}

TEST_P(Refusal, MlockFailureDuringPromotionAfterAFreeLeavesTheItemWaiting) {
  dev().set_wired_limit(4 * page);
  nuvec::Buffer first = dev().new_buffer(4 * page);   // wired
  nuvec::Buffer second = dev().new_buffer(4 * page);  // waits
  dev().set_cache_limit(0);  // a free releases the block, unwiring it
  ASSERT_EQ(stats().wired, 4 * page);
  calls_->fail(Call::mlock, ENOMEM);
  EXPECT_NO_THROW(first.reset());
  EXPECT_EQ(stats().wired, 0u);  // second could not be wired: it still waits
  calls_->heal();
  // The next promotion wires it.
  dev().set_wired_limit(8 * page);
  EXPECT_EQ(stats().wired, 4 * page);
}

TEST_P(Refusal, MunmapFailureInClearCacheIsIoErrorAndKeepsTheBlock) {
  ONLY_WITHOUT_RESERVATIONS();
  nuvec::Buffer b = dev().new_buffer(4 * page);
  b.reset();
  const MemoryStats before = stats();
  calls_->fail(Call::munmap, EINVAL);
  EXPECT_THROW(dev().clear_cache(), nuvec::IoError);
  EXPECT_EQ(stats(), before) << "the system still holds the block: the cache still counts it";
  calls_->heal();
}

TEST_P(Refusal, MunmapFailureOfAWiredCachedBlockKeepsItWired) {
  ONLY_WITHOUT_RESERVATIONS();
  dev().set_wired_limit(kMiB);
  nuvec::Buffer b = dev().new_buffer(4 * page);
  b.reset();
  const MemoryStats before = stats();
  ASSERT_EQ(before.wired, 4 * page);
  calls_->fail(Call::munmap, EINVAL);
  EXPECT_THROW(dev().clear_cache(), nuvec::IoError);
  EXPECT_EQ(stats(), before) << "a refused clear_cache changes no statistic";
  calls_->heal();
}

TEST_P(Refusal, MunmapFailureOnUnmapIsNotRaised) {
  TempFile file(2 * page, 9);
  nuvec::MappedFile f = dev().map_file(file.path());
  calls_->fail(Call::munmap, EINVAL);
  EXPECT_NO_THROW(f.reset());  // a destructor cannot raise
  EXPECT_EQ(stats().mapped, 0u);
  EXPECT_EQ(calls_->injected(Call::munmap), 1u);
  calls_->heal();
  nuvec::Buffer b = dev().new_buffer(4 * page);
  EXPECT_EQ(stats().active, 4 * page);
}

TEST_P(Refusal, MunmapFailureWhenTrimmingOnFreeIsNotRaised) {
  ONLY_WITHOUT_RESERVATIONS();
  dev().set_cache_limit(0);
  nuvec::Buffer b = dev().new_buffer(4 * page);
  calls_->fail(Call::munmap, EINVAL);
  EXPECT_NO_THROW(b.reset());
  const MemoryStats s = stats();
  EXPECT_EQ(s.active, 0u);
  // The block is either released or still counted: never lost from both.
  EXPECT_EQ(s.cache, calls_->totals().block_bytes) << s;
  calls_->heal();
  dev().clear_cache();
  EXPECT_EQ(stats().cache, 0u);
}

// In an arena a cached extent goes back to the system by madvise
// (MADV_DONTNEED): the counterparts of the munmap failures above.

TEST_P(Refusal, DecommitFailureInClearCacheIsIoErrorAndKeepsTheExtent) {
  ONLY_WITH_RESERVATIONS();
  nuvec::Buffer b = dev().new_buffer(4 * page);
  b.reset();
  const MemoryStats before = stats();
  calls_->fail(Call::madvise_dontneed, EINVAL);
  try {
    dev().clear_cache();
    FAIL() << "clear_cache succeeded";
  } catch (const nuvec::IoError& e) {
    EXPECT_EQ(e.error_code(), EINVAL);
    EXPECT_TRUE(contains(e.what(), "clear_cache on cpu: the system refused to release a cached block (Invalid argument)")) << e.what();
  }
  EXPECT_EQ(stats(), before) << "the pages are still committed: the cache still counts them";
  calls_->heal();
  dev().clear_cache();
  EXPECT_EQ(stats().cache, 0u);
}

TEST_P(Refusal, DecommitFailureOfAWiredCachedExtentKeepsItWired) {
  ONLY_WITH_RESERVATIONS();
  dev().set_wired_limit(kMiB);
  nuvec::Buffer b = dev().new_buffer(4 * page);
  b.reset();
  const MemoryStats before = stats();
  ASSERT_EQ(before.wired, 4 * page);
  calls_->fail(Call::madvise_dontneed, EINVAL);
  EXPECT_THROW(dev().clear_cache(), nuvec::IoError);
  EXPECT_EQ(stats(), before) << "unlocked to be decommitted, then locked again";
  EXPECT_EQ(calls_->totals().locked_bytes, 4 * page);
  calls_->heal();
}

TEST_P(Refusal, DecommitAndRelockFailingLeaveTheExtentCachedAndUnwired) {
  ONLY_WITH_RESERVATIONS();
  dev().set_wired_limit(kMiB);
  nuvec::Buffer b = dev().new_buffer(4 * page);
  std::byte* const address = b.data();
  b.reset();
  calls_->fail(Call::madvise_dontneed, EINVAL);
  calls_->fail(Call::mlock, ENOMEM);
  EXPECT_THROW(dev().clear_cache(), nuvec::IoError);
  const MemoryStats s = stats();
  EXPECT_EQ(s.cache, 4 * page) << "still committed";
  EXPECT_EQ(s.wired, 0u) << "it could not be locked again";
  EXPECT_EQ(calls_->totals().locked_bytes, 0u);
  calls_->heal();
  // An ordinary cached extent now: it is split to serve a smaller request.
  nuvec::Buffer c = dev().new_buffer(page);
  EXPECT_EQ(c.data(), address);
  EXPECT_EQ(stats().cache, 3 * page);
  c.reset();
  dev().clear_cache();
  EXPECT_EQ(stats().cache, 0u);
}

TEST_P(Refusal, DecommitFailureOfATrimsCutKeepsTheExtentWhole) {
  ONLY_WITH_RESERVATIONS();
  nuvec::Buffer b = dev().new_buffer(4 * page), after = dev().new_buffer(page);
  std::byte* const address = b.data();
  b.reset();
  MemoryStats want = stats();
  calls_->fail(Call::madvise_dontneed, EINVAL);
  EXPECT_NO_THROW(dev().set_cache_limit(page));  // it would cut three pages off
  EXPECT_EQ(calls_->injected(Call::madvise_dontneed), 1u);
  want.cache_limit = page;
  EXPECT_EQ(stats(), want) << "refused: all four pages stay cached, above the cache limit";
  calls_->heal();
  nuvec::Buffer again = dev().new_buffer(4 * page);
  EXPECT_EQ(again.data(), address) << "still one extent";
  EXPECT_EQ(stats().system_allocations, want.system_allocations);
}

TEST_P(Refusal, DecommitFailureWhenTrimmingOnFreeIsNotRaised) {
  ONLY_WITH_RESERVATIONS();
  dev().set_cache_limit(0);
  nuvec::Buffer b = dev().new_buffer(4 * page);
  calls_->fail(Call::madvise_dontneed, EINVAL);
  EXPECT_NO_THROW(b.reset());
  const MemoryStats s = stats();
  EXPECT_EQ(s.active, 0u);
  EXPECT_EQ(s.cache, 4 * page) << "refused: it stays cached, above the cache limit until a later release";
  calls_->heal();
  dev().clear_cache();
  EXPECT_EQ(stats().cache, 0u);
}

}  // namespace
