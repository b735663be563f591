// The allocator's commit path, as the CUDA arena uses it, on a host backend
// that commits explicitly out of a fixed capacity (committing_backend.h):
// every block carved from a hole has its pages committed before it is
// handed out, a granule shared by small blocks is committed once, a refused
// commit releases the cache and retries once, and a refusal leaves every
// statistic as it was. Runs without a GPU (CI); the same cases on the GPU
// are in cuda_device_test.cc.
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "committing_backend.h"
#include "nuvec/nuvec.h"
#include "support/stats_invariants.h"
#include "support/text.h"

namespace {

using nuvec::MemoryStats;
using nuvec_test::CommittingBackend;
using nuvec_test::contains;
using nuvec_test::kMiB;

constexpr std::size_t kPage = CommittingBackend::kPage;

class ArenaCommitTest : public ::testing::Test {
 protected:
  void make(std::size_t capacity) {
    auto backend = std::make_unique<CommittingBackend>(capacity);
    backend_ = backend.get();
    device_ = std::make_unique<nuvec::Device>(std::move(backend), false);
  }
  void TearDown() override {
    if (device_) {
      const MemoryStats s = device_->memory();
      EXPECT_EQ(nuvec_test::invariant_violations(s), "");
      EXPECT_GE(backend_->committed_bytes(), s.active + s.cache);
      EXPECT_EQ(committed().bytes, backend_->committed_bytes());
    }
  }
  nuvec::Device& dev() { return *device_; }
  MemoryStats stats() const { return device_->memory(); }
  nuvec::detail::Committed committed() const {
    const nuvec::DeviceCounters c = (*device_).counters();
    return {c.committed.value(), c.committed_peak.value()};
  }

  CommittingBackend* backend_ = nullptr;
  std::unique_ptr<nuvec::Device> device_;
};

TEST_F(ArenaCommitTest, BlocksFromHolesAreCommittedWholePagesOnce) {
  make(64 * kMiB);
  std::vector<nuvec::Buffer> small;
  for (int i = 0; i < 5; ++i) small.push_back(dev().new_buffer(1000));
  EXPECT_EQ(backend_->committed_bytes(), kPage) << "five small blocks share one page";
  small.push_back(dev().new_buffer(kPage - 512));  // crosses into the second page
  EXPECT_EQ(backend_->committed_bytes(), 2 * kPage);
  nuvec::Buffer large = dev().new_buffer(3 * kPage + 1);
  EXPECT_EQ(large.capacity(), 4 * kPage);
  EXPECT_EQ(backend_->committed_bytes(), 6 * kPage);
  EXPECT_EQ(stats().system_allocations, 7u) << "seven misses";
  EXPECT_EQ(dev().counters().reservations, 2u) << "from one reservation of each kind";
  // A hit is served from committed memory: no commit call at all.
  large.reset();
  const std::size_t calls = backend_->commit_calls();
  large = dev().new_buffer(3 * kPage);
  EXPECT_EQ(backend_->commit_calls(), calls);
  EXPECT_EQ(backend_->committed_bytes(), 6 * kPage);
  EXPECT_EQ(committed().peak, 6 * kPage);
  // Releasing gives pages back: the small blocks' pages once all of them go.
  small.clear();
  dev().clear_cache();
  EXPECT_EQ(backend_->committed_bytes(), 3 * kPage) << "only the live large block's pages";
  dev().reset_peak();
  EXPECT_EQ(committed().peak, 3 * kPage);
}

// The device is full and nothing is cached: a clear OutOfMemory, and no
// statistic changes — the reservation made for the block goes back too.
TEST_F(ArenaCommitTest, ARefusedCommitChangesNoStatistic) {
  make(8 * kMiB);
  nuvec::Buffer small = dev().new_buffer(1000);
  const MemoryStats before = stats();
  ASSERT_EQ(backend_->live_reservations(), 1u);
  try {
    nuvec::Buffer refused = dev().new_buffer(8 * kMiB);  // a page is already taken by the small block
    ADD_FAILURE() << "more than the device has was committed";
  } catch (const nuvec::OutOfMemory& e) {
    EXPECT_EQ(e.stats(), before);
    EXPECT_TRUE(contains(e.what(), "from the system")) << e.what();
    EXPECT_TRUE(contains(e.what(), "Cannot allocate memory")) << e.what();
  }
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(backend_->live_reservations(), 1u) << "the reservation made for it went back";
  EXPECT_EQ(backend_->committed_bytes(), kPage);
  EXPECT_EQ(dev().new_buffer(6 * kMiB).capacity(), 6 * kMiB) << "what is left still serves";
}

// The cache holds what a new size needs: the refused commit releases it
// (the released extents become holes, merged) and the retry succeeds.
TEST_F(ArenaCommitTest, ARefusedCommitReleasesTheCacheAndRetries) {
  make(16 * kMiB);
  std::vector<nuvec::Buffer> held;
  held.push_back(dev().new_buffer(6 * kMiB));
  nuvec::Buffer keep = dev().new_buffer(2 * kMiB);
  held.push_back(dev().new_buffer(6 * kMiB));
  held.clear();  // two cached 6 MiB extents, apart: neither serves 8 MiB
  ASSERT_EQ(stats().cache, 12 * kMiB);
  nuvec::Buffer eight = dev().new_buffer(8 * kMiB);
  EXPECT_EQ(stats().cache, 0u) << "the cache was released for it";
  EXPECT_EQ(stats().active, 10 * kMiB);
  EXPECT_EQ(stats().system_allocations, 4u) << "four misses";
  EXPECT_EQ(dev().counters().reservations, 1u);
  EXPECT_EQ(backend_->committed_bytes(), 10 * kMiB);
}

// A second refusal after the release: OutOfMemory; releasing the cache is
// the only change it leaves.
TEST_F(ArenaCommitTest, ASecondRefusalLeavesOnlyTheReleasedCache) {
  make(16 * kMiB);
  { nuvec::Buffer cached = dev().new_buffer(4 * kMiB); }
  nuvec::Buffer live = dev().new_buffer(8 * kMiB);
  MemoryStats want = stats();
  ASSERT_EQ(want.cache, 4 * kMiB);
  EXPECT_THROW(dev().new_buffer(10 * kMiB), nuvec::OutOfMemory);
  want.cache = 0;
  EXPECT_EQ(stats(), want);
  EXPECT_EQ(backend_->committed_bytes(), 8 * kMiB);
}

// Any failure but out-of-memory would not heal by releasing the cache: it
// is reported at once, and the cache stays.
TEST_F(ArenaCommitTest, OtherErrorsAreNotRetried) {
  make(64 * kMiB);
  { nuvec::Buffer cached = dev().new_buffer(4 * kMiB); }
  const MemoryStats before = stats();
  backend_->fail_commits_with(EIO);
  try {
    nuvec::Buffer refused = dev().new_buffer(10 * kMiB);
    ADD_FAILURE() << "a failed commit handed out a block";
  } catch (const nuvec::OutOfMemory& e) {
    EXPECT_TRUE(contains(e.what(), "Input/output error")) << e.what();
  }
  EXPECT_EQ(stats(), before);
  backend_->fail_commits_with(0);
  EXPECT_EQ(dev().new_buffer(10 * kMiB).capacity(), 10 * kMiB);
}

// A steady loop commits nothing after its first round.
TEST_F(ArenaCommitTest, SteadyStateCommitsNothingNew) {
  make(256 * kMiB);
  const std::vector<std::size_t> sizes = {1, 700, 5000, 100000, kPage - 512, kPage, kPage + 1, 7 * kMiB};
  std::size_t calls = 0;
  for (int round = 0; round < 100; ++round) {
    std::vector<nuvec::Buffer> live;
    for (std::size_t len : sizes) live.push_back(dev().new_buffer(len));
    if (round == 0) calls = backend_->commit_calls();
    ASSERT_EQ(backend_->commit_calls(), calls) << "round " << round;
  }
}

}  // namespace
