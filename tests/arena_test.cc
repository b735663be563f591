// The arena (docs/allocator-policy.md, "The arena"), rule by rule, on the CPU
// backend with small reservations so that their edges are easy to reach:
// taking splits an extent, freeing merges neighbours, best fit, holes before
// new reservations, release order, what goes back to the system, wired
// extents, streams, and a reservation the system refuses.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cpu/cpu_backend.h"
#include "memory/backend.h"
#include "nuvec/nuvec.h"
#include "support/counting_system_calls.h"
#include "support/stats_invariants.h"
#include "support/text.h"

namespace {

using nuvec::MemoryStats;
using nuvec_test::contains;
using nuvec_test::CountingSystemCalls;
using nuvec_test::kMiB;
using Call = CountingSystemCalls::Call;

using nuvec_test::kKiB;
constexpr std::size_t kReservation = kMiB;

// The CPU backend, recording the stream handovers and synchronizations the
// allocator asks for (the CPU itself has no streams and ignores them). It
// forwards each of the inner backend's interfaces whole, so none of their
// functions can be dropped on the way.
class RecordingBackend final : public nuvec::detail::Backend, private nuvec::detail::StreamOrder {
 public:
  explicit RecordingBackend(std::unique_ptr<nuvec::detail::Backend> inner) : inner_(std::move(inner)) {}

  std::vector<std::pair<nuvec::detail::Stream, nuvec::detail::Stream>> handovers;
  int synchronizations = 0;
  std::vector<nuvec::detail::Stream> frees_on;  // the streams of frees told, in order

  std::string_view name() const override { return inner_->name(); }
  nuvec::detail::SizeClasses size_classes() const override { return inner_->size_classes(); }
  std::size_t default_memory_limit() const override { return inner_->default_memory_limit(); }
  std::size_t default_wired_limit() const override { return inner_->default_wired_limit(); }
  nuvec::detail::ReservationSource* reservations() override { return inner_->reservations(); }
  nuvec::detail::BlockSource* blocks() override { return inner_->blocks(); }
  nuvec::detail::Wiring* buffer_wiring() override { return inner_->buffer_wiring(); }
  nuvec::detail::Wiring& mapping_wiring() override { return inner_->mapping_wiring(); }
  nuvec::detail::FileMapper& files() override { return inner_->files(); }
  nuvec::detail::HostCopy* host_copy() override { return inner_->host_copy(); }
  nuvec::detail::StreamOrder* streams() override { return this; }

 private:
  void order_after(nuvec::detail::Stream from, nuvec::detail::Stream to) noexcept override {
    handovers.emplace_back(from, to);
  }
  void freed_on(nuvec::detail::Stream stream) noexcept override { frees_on.push_back(stream); }
  void synchronize() noexcept override { ++synchronizations; }

  std::unique_ptr<nuvec::detail::Backend> inner_;
};

class Arena : public ::testing::Test {
 protected:
  void SetUp() override {
    calls_ = std::make_shared<CountingSystemCalls>();
    auto backend = std::make_unique<RecordingBackend>(
        nuvec::cpu::make_backend(calls_, {.reservations = true, .reservation_bytes = kReservation}));
    backend_ = backend.get();
    device_ = std::make_unique<nuvec::Device>(std::move(backend), false);
    device_->start_trace(1 << 16);
  }
  void TearDown() override {
    if (device_) {
      EXPECT_EQ(nuvec_test::invariant_violations(device_->memory()), "");
    }
    device_.reset();
    calls_->heal();
    const CountingSystemCalls::Totals t = calls_->totals();
    EXPECT_EQ(t.blocks, 0u) << "reservations leaked";
    EXPECT_EQ(t.locked_bytes, 0u);
    EXPECT_EQ(t.decommits_while_locked, 0u);
    EXPECT_EQ(t.decommits_outside, 0u);
  }

  nuvec::Device& dev() { return *device_; }
  MemoryStats stats() const { return device_->memory(); }
  // Whether the last allocation was served by the cache (its trace event).
  bool last_was_hit() const {
    const nuvec::Trace trace = *device_->trace();
    for (auto it = trace.events.rbegin(); it != trace.events.rend(); ++it) {
      if (it->kind == nuvec::TraceEventKind::allocate) return it->hit;
    }
    ADD_FAILURE() << "no allocation in the trace";
    return false;
  }
  nuvec::Buffer take(std::size_t len, std::uintptr_t stream = 0) { return dev().new_buffer(len, stream); }
  std::size_t decommitted() const { return calls_->totals().decommitted_bytes; }

  const std::size_t page = nuvec::page_size();
  std::shared_ptr<CountingSystemCalls> calls_;
  RecordingBackend* backend_ = nullptr;
  std::unique_ptr<nuvec::Device> device_;
};

// ---------------------------------------------------------------------------
// Taking and freeing.

TEST_F(Arena, TakingSplitsAnExtentAndTheRestStaysCached) {
  nuvec::Buffer a = take(8 * page);
  nuvec::Buffer guard = take(page);
  std::byte* const at = a.data();
  a.reset();
  ASSERT_EQ(stats().cache, 8 * page);

  nuvec::Buffer b = take(3 * page);
  EXPECT_EQ(b.data(), at) << "the low end";
  EXPECT_TRUE(last_was_hit());
  EXPECT_EQ(b.capacity(), 3 * page) << "a split block counts its own size";
  EXPECT_EQ(stats().cache, 5 * page);
  nuvec::Buffer c = take(5 * page);
  EXPECT_EQ(c.data(), at + 3 * page);
  EXPECT_TRUE(last_was_hit());
  EXPECT_EQ(stats().cache, 0u);
  EXPECT_EQ(stats().active, 9 * page);
  EXPECT_EQ(dev().counters().reservations, 1u) << "one reservation";
}

TEST_F(Arena, FreeingMergesWithCachedNeighbours) {
  nuvec::Buffer a = take(2 * page), b = take(2 * page), c = take(2 * page), guard = take(page);
  std::byte* const at = a.data();
  ASSERT_EQ(b.data(), at + 2 * page);
  ASSERT_EQ(c.data(), at + 4 * page);
  a.reset();
  c.reset();
  // Two extents of two pages: six pages do not fit in either.
  nuvec::Buffer big = take(6 * page);
  EXPECT_FALSE(last_was_hit());
  EXPECT_NE(big.data(), at);
  big.reset();  // merges with nothing: the guard is between
  b.reset();    // merges a, b and c
  const MemoryStats before = stats();
  nuvec::Buffer again = take(6 * page);
  EXPECT_TRUE(last_was_hit());
  EXPECT_EQ(again.data(), at);
  EXPECT_EQ(stats().cache, before.cache - 6 * page);
}

TEST_F(Arena, BestFitIsTheSmallestThenTheMostRecentlyIndexed) {
  // Extents of 3, 5 and 5 pages, kept apart by live guards.
  std::vector<nuvec::Buffer> guards;
  std::vector<nuvec::Buffer> extents;
  for (std::size_t pages : {3, 5, 5}) {
    extents.push_back(take(pages * page));
    guards.push_back(take(page));
  }
  std::vector<std::byte*> at;
  for (nuvec::Buffer& e : extents) {
    at.push_back(e.data());
    e.reset();  // in order: the second 5-page extent is the most recent
  }
  nuvec::Buffer four = take(4 * page);
  EXPECT_EQ(four.data(), at[2]) << "a 5-page extent, the most recently freed";
  nuvec::Buffer two = take(2 * page);
  EXPECT_EQ(two.data(), at[0]) << "the 3-page extent: the smallest that fits";
  // Left: 1 page at at[2] + 4 pages, 1 page at at[0] + 2 pages (indexed
  // again when split, last), and 5 pages at at[1].
  nuvec::Buffer one = take(page);
  EXPECT_EQ(one.data(), at[0] + 2 * page) << "two 1-page extents: the one indexed last";
  nuvec::Buffer five = take(5 * page);
  EXPECT_EQ(five.data(), at[1]);
  EXPECT_EQ(dev().counters().reservations, 1u);
}

TEST_F(Arena, BlocksBelowAPageHaveTheirOwnReservation) {
  nuvec::Buffer small = take(100);
  nuvec::Buffer large = take(page);
  EXPECT_EQ(dev().counters().reservations, 2u);
  EXPECT_EQ(small.capacity(), 256u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large.data()) % page, 0u);
  // Small blocks are packed at 256-byte steps and merge like any others.
  nuvec::Buffer s1 = take(300), s2 = take(200), s3 = take(3000);
  EXPECT_EQ(s1.data(), small.data() + 256);
  EXPECT_EQ(s2.data(), s1.data() + 512);
  EXPECT_EQ(s3.data(), s2.data() + 256);
  for (const nuvec::Buffer* b : {&small, &s1, &s2, &s3}) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->data()) % 256, 0u);
  }
  std::byte* const at = s1.data();
  s1.reset();
  s2.reset();
  nuvec::Buffer joined = take(768);
  EXPECT_EQ(joined.data(), at) << "512 + 256 bytes, merged";
  EXPECT_TRUE(last_was_hit());
  // A page-sized block never comes from the small blocks' reservation.
  joined.reset();
  nuvec::Buffer pageful = take(page);
  EXPECT_NE(pageful.data(), at);
  EXPECT_EQ(dev().counters().reservations, 2u);
}

// ---------------------------------------------------------------------------
// Holes and reservations.

TEST_F(Arena, HolesServeBeforeANewReservation) {
  nuvec::Buffer a = take(kReservation / 2);
  nuvec::Buffer b = take(kReservation / 2);  // the reservation is full
  std::byte* const at = a.data();
  ASSERT_EQ(dev().counters().reservations, 1u);
  a.reset();
  dev().clear_cache();
  EXPECT_EQ(stats().cache, 0u) << "a hole counts nowhere";
  EXPECT_EQ(decommitted(), kReservation / 2);

  nuvec::Buffer c = take(kReservation / 4);
  EXPECT_EQ(c.data(), at) << "the hole, decommitted: no system call";
  EXPECT_FALSE(last_was_hit()) << "fresh pages: a miss";
  EXPECT_EQ(dev().counters().reservations, 1u);
  EXPECT_EQ(stats().active, 3 * kReservation / 4);
  // The hole left (a quarter) is too small: a new reservation.
  nuvec::Buffer d = take(kReservation / 2);
  EXPECT_FALSE(last_was_hit());
  EXPECT_EQ(dev().counters().reservations, 2u);
  // A request larger than a reservation gets one of its own size.
  nuvec::Buffer e = take(3 * kReservation);
  EXPECT_EQ(dev().counters().reservations, 3u);
  EXPECT_EQ(calls_->totals().block_bytes, 2 * kReservation + 3 * kReservation);
}

TEST_F(Arena, ExtentsNeverMergeAcrossReservations) {
  nuvec::Buffer a = take(kReservation), b = take(kReservation);  // two full reservations
  ASSERT_EQ(dev().counters().reservations, 2u);
  a.reset();
  b.reset();
  EXPECT_EQ(stats().cache, 2 * kReservation);
  nuvec::Buffer both = take(2 * kReservation);
  EXPECT_FALSE(last_was_hit()) << "even when the two reservations happen to be adjacent";
  EXPECT_EQ(dev().counters().reservations, 3u);
  EXPECT_EQ(stats().cache, 2 * kReservation);
}

TEST_F(Arena, ReleaseIsLeastRecentlyFreedFirstAndAMergedExtentIsFreedNow) {
  nuvec::Buffer a = take(page), guard = take(page), b = take(2 * page), c = take(3 * page), guard2 = take(page);
  std::byte* const at_a = a.data();
  std::byte* const at_b = b.data();
  a.reset();  // oldest
  c.reset();
  b.reset();  // merges with c: b + c, freed now
  ASSERT_EQ(stats().cache, 6 * page);
  dev().set_cache_limit(5 * page);
  EXPECT_EQ(stats().cache, 5 * page) << "a went first, b + c stayed";
  EXPECT_EQ(decommitted(), page);
  // b + c is one extent of five pages, still cached.
  nuvec::Buffer five = take(5 * page);
  EXPECT_EQ(five.data(), at_b);
  EXPECT_TRUE(last_was_hit());
  // a's page is a hole now: a page comes from there (the smallest hole).
  nuvec::Buffer one = take(page);
  EXPECT_EQ(one.data(), at_a);
  EXPECT_FALSE(last_was_hit());
}

// A trim releases only the excess: the high part of the least recently
// freed extent becomes a hole (here merged with the reservation's hole after
// it); the low part stays cached where it was.
TEST_F(Arena, ATrimCutsTheOldestExtentAndItsHighPagesBecomeAHole) {
  nuvec::Buffer a = take(6 * page);
  std::byte* const at = a.data();
  a.reset();
  ASSERT_EQ(stats().cache, 6 * page);
  dev().set_cache_limit(4 * page);
  EXPECT_EQ(stats().cache, 4 * page);
  EXPECT_EQ(decommitted(), 2 * page) << "the two high pages, no more";
  const nuvec::Trace trace = *dev().trace();
  ASSERT_EQ(trace.events.back().kind, nuvec::TraceEventKind::release);
  EXPECT_EQ(trace.events.back().id, reinterpret_cast<std::uintptr_t>(at + 4 * page)) << "the range released";
  EXPECT_EQ(trace.events.back().size, 2 * page);
  nuvec::Buffer low = take(4 * page);
  EXPECT_EQ(low.data(), at);
  EXPECT_TRUE(last_was_hit());
  nuvec::Buffer high = take(2 * page);
  EXPECT_EQ(high.data(), at + 4 * page) << "the hole the cut joined";
  EXPECT_FALSE(last_was_hit());
  EXPECT_EQ(dev().counters().reservations, 1u);
}

// Below a page a cut gives back the pages its part holds alone; a page it
// shares with the rest of its extent, or with a live block, stays.
TEST_F(Arena, ATrimBelowAPageGivesBackOnlyThePagesThePartHoldsAlone) {
  // [0, 3K) [3K, 6K) [6K, 9K) cached and merged, [9K, 12K) live.
  nuvec::Buffer a = take(3 * kKiB), b = take(3 * kKiB), c = take(3 * kKiB), live = take(3 * kKiB);
  std::byte* const at = a.data();
  ASSERT_EQ(page, 4 * kKiB) << "the figures below assume 4 KiB pages";
  ASSERT_EQ(live.data(), at + 9 * kKiB);
  a.reset();
  b.reset();
  c.reset();
  ASSERT_EQ(stats().cache, 9 * kKiB);
  dev().set_cache_limit(4 * kKiB);
  EXPECT_EQ(stats().cache, 4 * kKiB) << "[4K, 9K) left the cache";
  EXPECT_EQ(decommitted(), 4 * kKiB) << "page [4K, 8K) went; [8K, 12K) is shared with the live block";
  nuvec::Buffer rest = take(4 * kKiB - 256);
  EXPECT_EQ(rest.data(), at);
  EXPECT_TRUE(last_was_hit());
}

// A wired cached extent is never split: a trim releases it whole.
TEST_F(Arena, ATrimReleasesAWiredExtentWhole) {
  dev().set_wired_limit(kMiB);
  nuvec::Buffer a = take(4 * page), after = take(page);
  a.reset();
  ASSERT_EQ(stats().wired, 5 * page);
  ASSERT_EQ(stats().cache, 4 * page);
  dev().set_cache_limit(3 * page);
  EXPECT_EQ(stats().cache, 0u);
  EXPECT_EQ(stats().wired, page) << "only the live block stays wired";
  EXPECT_EQ(decommitted(), 4 * page);
}

TEST_F(Arena, OnlyWholePagesOfSmallBlocksGoBack) {
  // Three blocks of 3 KiB from the start of the small blocks' reservation:
  // [0, 3K) [3K, 6K) [6K, 9K), pages [0, 4K) [4K, 8K) [8K, 12K).
  nuvec::Buffer a = take(3 * kKiB), b = take(3 * kKiB), c = take(3 * kKiB);
  ASSERT_EQ(b.data(), a.data() + 3 * kKiB);
  ASSERT_EQ(c.data(), b.data() + 3 * kKiB);
  ASSERT_EQ(page, 4 * kKiB) << "the figures below assume 4 KiB pages";
  dev().set_cache_limit(0);
  b.reset();  // its pages are shared with a and c: none goes back
  EXPECT_EQ(decommitted(), 0u);
  a.reset();  // page [0, 4K) is all hole now
  EXPECT_EQ(decommitted(), 4 * kKiB);
  c.reset();  // [4K, 12K): c's pages, and the one it shared with b's hole
  EXPECT_EQ(decommitted(), 12 * kKiB);
  EXPECT_EQ(stats().cache, 0u);
}

// ---------------------------------------------------------------------------
// Wired extents.

TEST_F(Arena, WiredCachedExtentsAreNeitherSplitNorMerged) {
  dev().set_wired_limit(kMiB);
  nuvec::Buffer a = take(2 * page), b = take(2 * page);
  std::byte* const at = a.data();
  ASSERT_EQ(stats().wired, 4 * page);
  a.reset();
  b.reset();
  EXPECT_EQ(stats().wired, 4 * page) << "they stay wired in the cache";
  const std::size_t locks = calls_->calls(Call::mlock);
  nuvec::Buffer four = take(4 * page);
  EXPECT_FALSE(last_was_hit()) << "not merged: no four-page extent";
  four.reset();
  // A request a wired block fits is served by bounded best fit (of at least
  // the request, below min(2·request, request + 2 pages)): whole, still
  // wired, no mlock. The four-page block is not below that bound.
  nuvec::Buffer two = take(page + 1);
  EXPECT_EQ(two.data(), at + 2 * page) << "of two equal blocks, the most recently freed";
  EXPECT_EQ(two.capacity(), 2 * page);
  EXPECT_TRUE(last_was_hit());
  EXPECT_EQ(calls_->calls(Call::mlock), locks + 1) << "only the four pages were locked";
  two.reset();
  // Lowering the wired limit unlocks them: ordinary extents where they are,
  // merged when a neighbour is next freed.
  dev().set_wired_limit(0);
  EXPECT_EQ(stats().wired, 0u);
  nuvec::Buffer split = take(page);
  EXPECT_TRUE(last_was_hit());
  EXPECT_EQ(split.capacity(), page) << "unwired extents are split";
  EXPECT_EQ(split.data(), at) << "of the two-page extents, the one unlocked last (the least recently freed)";
}

// ---------------------------------------------------------------------------
// Streams.

TEST_F(Arena, AnExtentOfAnotherStreamServesAfterItsWorkIsOrdered) {
  nuvec::Buffer a = take(4 * page, /*stream=*/1);
  std::byte* const at = a.data();
  a.reset();
  nuvec::Buffer b = take(4 * page, /*stream=*/2);
  EXPECT_EQ(b.data(), at);
  EXPECT_TRUE(last_was_hit());
  ASSERT_EQ(backend_->handovers.size(), 1u);
  EXPECT_EQ(backend_->handovers[0], std::make_pair(nuvec::detail::Stream{1}, nuvec::detail::Stream{2}));
}

// The point a block's stream had reached is taken at its free, not at its
// reuse: by then the stream may be gone (destroyed with the session that
// owned it). Frees on the legacy default stream (0), which never goes, are
// not told.
TEST_F(Arena, EachFreeOnAStreamIsToldWhenItHappens) {
  nuvec::Buffer a = take(4 * page, /*stream=*/1);
  nuvec::Buffer b = take(page, /*stream=*/0);
  EXPECT_TRUE(backend_->frees_on.empty());
  a.reset();
  ASSERT_EQ(backend_->frees_on, std::vector<nuvec::detail::Stream>{1});
  EXPECT_TRUE(backend_->handovers.empty()) << "the free orders nothing yet";
  b.reset();
  EXPECT_EQ(backend_->frees_on, std::vector<nuvec::detail::Stream>{1}) << "stream 0 is not told";
  nuvec::Buffer c = take(4 * page, /*stream=*/2);
  EXPECT_EQ(backend_->frees_on, std::vector<nuvec::detail::Stream>{1}) << "the reuse tells no free";
  ASSERT_EQ(backend_->handovers.size(), 1u);
}

TEST_F(Arena, TheTraceRecordsTheStreamOfEachAllocationAndFree) {
  nuvec::Buffer a = take(page, /*stream=*/7);
  a.reset();
  std::vector<std::pair<nuvec::TraceEventKind, std::int64_t>> seen;
  const auto trace = device_->trace();  // a copy: it must outlive the loop
  ASSERT_TRUE(trace);
  for (const nuvec::TraceEvent& e : trace->events) {
    if (e.kind == nuvec::TraceEventKind::allocate || e.kind == nuvec::TraceEventKind::free) {
      seen.emplace_back(e.kind, e.stream);
    }
  }
  const std::vector<std::pair<nuvec::TraceEventKind, std::int64_t>> want = {
      {nuvec::TraceEventKind::allocate, 7}, {nuvec::TraceEventKind::free, 7}};
  EXPECT_EQ(seen, want);
}

TEST_F(Arena, ExtentsOfTheSameStreamArePreferredAndOnlyTheyMerge) {
  nuvec::Buffer x = take(2 * page, 1), guard = take(page), y = take(6 * page, 2), guard2 = take(page);
  std::byte* const at_x = x.data();
  std::byte* const at_y = y.data();
  x.reset();
  y.reset();
  // Stream 2 asks for two pages: stream 1's exact fit is passed over for its own.
  nuvec::Buffer b = take(2 * page, 2);
  EXPECT_EQ(b.data(), at_y);
  EXPECT_TRUE(backend_->handovers.empty());
  // Neighbours on different streams stay apart.
  nuvec::Buffer p = take(page, 3), q = take(page, 4), guard3 = take(page, 4);
  std::byte* const at_p = p.data();
  p.reset();
  q.reset();
  nuvec::Buffer pq = take(2 * page, 3);
  EXPECT_NE(pq.data(), at_p) << "not merged across streams";
  (void)at_x;
}

// ---------------------------------------------------------------------------
// When the system refuses a reservation: OutOfMemory, nothing changed but
// the cache (released to retry once).

TEST_F(Arena, RefusedReservationIsOutOfMemoryAndChangesNothing) {
  nuvec::Buffer live = take(kReservation);  // the reservation is full; nothing cached
  const MemoryStats before = stats();
  calls_->fail(Call::mmap_anonymous, ENOMEM);
  try {
    take(page);
    FAIL() << "allocation succeeded";
  } catch (const nuvec::OutOfMemory& e) {
    EXPECT_EQ(e.stats(), before);
    EXPECT_TRUE(contains(e.what(), std::strerror(ENOMEM))) << e.what();
  }
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(backend_->synchronizations, 0) << "nothing cached: nothing to give back";
  calls_->heal();
  take(page);
  EXPECT_EQ(dev().counters().reservations, 2u);
}

TEST_F(Arena, RefusedReservationReleasesTheCacheAndAsksOnceMore) {
  nuvec::Buffer a = take(kReservation / 2), b = take(kReservation / 2);
  a.reset();  // half the reservation cached
  ASSERT_EQ(stats().cache, kReservation / 2);
  // 3/4 of a reservation fits neither the cached half nor a hole. The first
  // request to the system fails through (the backend tries 1 MiB, then the
  // request's own size), the second succeeds.
  calls_->fail(Call::mmap_anonymous, ENOMEM, /*times=*/2);
  nuvec::Buffer c = take(3 * kReservation / 4);
  EXPECT_EQ(calls_->injected(Call::mmap_anonymous), 2u);
  EXPECT_EQ(backend_->synchronizations, 1) << "the device finished with the cache first";
  EXPECT_EQ(stats().cache, 0u) << "released before asking again";
  EXPECT_EQ(decommitted(), kReservation / 2);
  EXPECT_EQ(dev().counters().reservations, 2u);
}

TEST_F(Arena, AfterTheCacheIsReleasedAHoleMayServe) {
  // [a: 1/2 live][c: 1/4 cached][hole: 1/4]: 3/8 fits neither the cached
  // quarter nor the hole, but the two merge into a hole of a half once c
  // is released.
  nuvec::Buffer a = take(kReservation / 2), c = take(kReservation / 4);
  std::byte* const at = c.data();
  c.reset();
  calls_->fail(Call::mmap_anonymous, ENOMEM);  // every time
  nuvec::Buffer d = take(3 * kReservation / 8);
  EXPECT_EQ(d.data(), at);
  EXPECT_EQ(dev().counters().reservations, 1u);
  EXPECT_EQ(stats().cache, 0u);
}

TEST_F(Arena, AfterTheCacheIsReleasedUnusedReservationsGoBack) {
  nuvec::Buffer a = take(kReservation);
  a.reset();  // a whole reservation cached
  ASSERT_EQ(calls_->totals().blocks, 1u);
  // Larger than a reservation: the first attempts fail; once the cache is
  // released the reservation is unused, goes back, and the next one succeeds.
  calls_->fail(Call::mmap_anonymous, ENOMEM, /*times=*/1);
  nuvec::Buffer big = take(2 * kReservation);
  EXPECT_EQ(calls_->totals().blocks, 1u) << "the unused reservation went back";
  EXPECT_EQ(calls_->totals().block_bytes, 2 * kReservation);
  EXPECT_EQ(dev().counters().reservations, 1u) << "the new one";
  EXPECT_EQ(dev().counters().reserved_bytes, 2 * kReservation);
  EXPECT_EQ(stats().system_allocations, 2u) << "two misses";
  EXPECT_EQ(stats().cache, 0u);
}

TEST_F(Arena, BothRefusalsAreOutOfMemoryWithOnlyTheCacheReleased) {
  nuvec::Buffer a = take(kReservation / 2), b = take(kReservation / 2);
  a.reset();
  MemoryStats want = stats();
  calls_->fail(Call::mmap_anonymous, ENOMEM);
  EXPECT_THROW(take(3 * kReservation / 4), nuvec::OutOfMemory);
  want.cache = 0;
  EXPECT_EQ(stats(), want);
}

TEST_F(Arena, WiringFailureReturnsTheReservationItMade) {
  dev().set_wired_limit(kMiB);
  const MemoryStats before = stats();
  calls_->fail(Call::mlock, EAGAIN);
  EXPECT_THROW(take(4 * page), nuvec::IoError);
  EXPECT_EQ(stats(), before);
  EXPECT_EQ(calls_->totals().blocks, 0u);
}

}  // namespace
