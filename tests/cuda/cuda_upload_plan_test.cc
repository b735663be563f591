// The upload plan (src/cuda/upload.h): every byte of every piece lands in
// exactly one batch entry, in order, within its slot, at aligned offsets;
// direct and staged pieces never share a batch. And the upload's staging
// budget in the accounting core (Allocator::wire_staging): it counts in
// `wired` within the wired limit, a refusal changes nothing, and mappings
// that waited for its room are wired when it goes. Plain C++ on the CPU
// device: runs everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <map>
#include <utility>
#include <random>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cuda/upload.h"
#include "memory/allocator.h"
#include "nuvec/nuvec.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"

namespace {

using nuvec::cuda::detail::Batch;
using nuvec::cuda::detail::CopyPiece;
using nuvec::cuda::detail::kStagingAlignment;
using nuvec::cuda::detail::plan_batches;
using nuvec::cuda::detail::plan_pinned_chunks;

// Fake addresses: only arithmetic is done on them.
const std::byte* source_at(std::uintptr_t a) { return reinterpret_cast<const std::byte*>(a); }

// Checks the plan's invariants for `pieces` and `slot`.
void expect_sound(const std::vector<CopyPiece>& pieces, const std::vector<Batch>& batches, std::size_t slot) {
  std::size_t piece = 0, done = 0;  // the next byte expected, in piece order
  auto skip_empty = [&] {
    while (piece < pieces.size() && pieces[piece].length == 0) ++piece;
  };
  skip_empty();
  for (const Batch& batch : batches) {
    ASSERT_FALSE(batch.entries.empty());
    std::size_t bytes = 0, end = 0, last = 0;
    for (const Batch::Entry& e : batch.entries) {
      ASSERT_LT(piece, pieces.size());
      const CopyPiece& p = pieces[piece];
      EXPECT_EQ(e.piece.source, p.source == nullptr ? nullptr : p.source + done);
      EXPECT_EQ(e.piece.tensor, p.tensor);
      EXPECT_EQ(e.piece.offset, p.offset + done);
      EXPECT_LE(e.piece.tensor, batch.last_tensor) << "a copy queued before its destination exists";
      last = std::max(last, e.piece.tensor);
      EXPECT_EQ(e.piece.direct, batch.direct);
      EXPECT_EQ(p.direct, batch.direct);
      EXPECT_EQ(e.piece.file, p.file);
      if (p.file >= 0) {
        EXPECT_EQ(e.piece.file_offset, p.file_offset + done) << "the file offset moves with the source";
      }
      EXPECT_GT(e.piece.length, 0u);
      EXPECT_EQ(e.staging_offset % kStagingAlignment, 0u);
      EXPECT_GE(e.staging_offset, end) << "entries overlap in the slot";
      EXPECT_LE(e.staging_offset + e.piece.length, slot);
      end = e.staging_offset + e.piece.length;
      bytes += e.piece.length;
      done += e.piece.length;
      ASSERT_LE(done, p.length);
      if (done == p.length) {
        ++piece;
        done = 0;
        skip_empty();
      }
    }
    EXPECT_EQ(batch.bytes, bytes);
    EXPECT_EQ(batch.last_tensor, last) << "no longer wait than the batch's own destinations";
  }
  EXPECT_EQ(piece, pieces.size()) << "bytes left out";
}

TEST(CudaUploadPlan, LongPiecesSplitShortOnesShareASlot) {
  const std::size_t slot = 4096;
  const std::vector<CopyPiece> pieces = {
      {source_at(0x10000), 0, 0, 10000, false},  // 3 batches: 4096, 4096, 1808
      {source_at(0x20000), 1, 0, 100, false},    // shares the third
      {source_at(0x30000), 2, 0, 0, false},      // dropped
      {source_at(0x40000), 3, 0, 3, false},      // shares it too
  };
  const auto batches = plan_batches(pieces, slot);
  expect_sound(pieces, batches, slot);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[2].entries.size(), 3u);
  EXPECT_EQ(batches[2].entries[1].staging_offset, 2048u) << "1808 rounded up to 256";
  EXPECT_EQ(batches[2].entries[2].staging_offset, 2304u);
}

TEST(CudaUploadPlan, AFullSlotOpensTheNextBatch) {
  const std::size_t slot = 1024;
  const std::vector<CopyPiece> pieces = {
      {source_at(0x1000), 0, 0, 1000, false},  // 1000: the next would start at 1024
      {source_at(0x2000), 1, 0, 10, false},
  };
  const auto batches = plan_batches(pieces, slot);
  expect_sound(pieces, batches, slot);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].entries[0].staging_offset, 0u);
}

TEST(CudaUploadPlan, DirectPiecesAreBatchedApart) {
  const std::size_t slot = 4096;
  const std::vector<CopyPiece> pieces = {
      {source_at(0x1000), 0, 0, 100, false},
      {source_at(0x2000), 1, 0, 9000, true},
      {source_at(0x3000), 2, 0, 100, true},
      {source_at(0x4000), 3, 0, 100, false},
  };
  const auto batches = plan_batches(pieces, slot);
  expect_sound(pieces, batches, slot);
  ASSERT_EQ(batches.size(), 5u);  // staged, direct x3 (4096, 4096, 808+100), staged
  EXPECT_FALSE(batches[0].direct);
  EXPECT_TRUE(batches[3].direct);
  EXPECT_FALSE(batches[4].direct);
}

TEST(CudaUploadPlan, RandomPiecesAreCoveredExactly) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    const std::size_t slot = kStagingAlignment * (1 + rng() % 64);
    std::vector<CopyPiece> pieces;
    std::uintptr_t at = 0x100000;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 40); i < n; ++i) {
      const std::size_t len = rng() % 3 == 0 ? rng() % 50 : rng() % (3 * slot);
      // Destinations in order, some pieces landing at an offset of theirs.
      CopyPiece piece{source_at(at), static_cast<std::size_t>(i), rng() % 3 == 0 ? rng() % 5000 : 0, len,
                      rng() % 5 == 0};
      if (!piece.direct && rng() % 2 == 0) {  // some read from a file, some only there (no source)
        piece.file = static_cast<int>(rng() % 3);
        piece.file_offset = rng() % (std::uint64_t{1} << 40);
        if (rng() % 2 == 0) piece.source = nullptr;
      }
      pieces.push_back(piece);
      at += len + 1;
    }
    SCOPED_TRACE(round);
    expect_sound(pieces, plan_batches(pieces, slot), slot);
  }
}

// A pinning plan: every byte copied exactly once from where it is; each
// batch's pinned range is whole pages, at most a chunk, covers its entries,
// and shares no page with another batch's.
void expect_sound_pinning(const std::vector<CopyPiece>& pieces, const std::vector<Batch>& batches, std::size_t chunk,
                          std::size_t page) {
  std::map<std::uintptr_t, CopyPiece> copied;  // source address -> the entry's piece, to check coverage
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> pinned;
  for (const Batch& batch : batches) {
    ASSERT_TRUE(batch.direct);
    std::size_t bytes = 0, last = 0;
    for (const Batch::Entry& e : batch.entries) {
      const auto s = reinterpret_cast<std::uintptr_t>(e.piece.source);
      last = std::max(last, e.piece.tensor);
      if (batch.pin_length != 0) {
        const auto lo = reinterpret_cast<std::uintptr_t>(batch.pin_begin);
        EXPECT_GE(s, lo);
        EXPECT_LE(s + e.piece.length, lo + batch.pin_length) << "an entry outside its pinned range";
      }
      EXPECT_TRUE(copied.emplace(s, e.piece).second) << "a byte copied twice";
      bytes += e.piece.length;
    }
    EXPECT_EQ(batch.bytes, bytes);
    EXPECT_EQ(batch.last_tensor, last);
    if (batch.pin_length != 0) {
      const auto lo = reinterpret_cast<std::uintptr_t>(batch.pin_begin);
      EXPECT_EQ(lo % page, 0u);
      EXPECT_EQ(batch.pin_length % page, 0u);
      EXPECT_LE(batch.pin_length, chunk);
      pinned.emplace_back(lo, lo + batch.pin_length);
    }
  }
  std::sort(pinned.begin(), pinned.end());
  for (std::size_t i = 1; i < pinned.size(); ++i) {
    EXPECT_LE(pinned[i - 1].second, pinned[i].first) << "two batches pin the same page";
  }
  // Coverage: each piece's bytes are the union of entries, source and destination in step.
  for (const CopyPiece& p : pieces) {
    std::size_t done = 0;
    while (done < p.length) {
      const auto it = copied.find(reinterpret_cast<std::uintptr_t>(p.source + done));
      ASSERT_NE(it, copied.end()) << "bytes left out";
      EXPECT_EQ(it->second.tensor, p.tensor);
      EXPECT_EQ(it->second.offset, p.offset + done) << "source and destination out of step";
      done += it->second.length;
    }
    EXPECT_EQ(done, p.length);
  }
}

TEST(CudaUploadPlan, PinnedChunksNeverShareAPage) {
  const std::size_t page = 4096, chunk = 4 * page;
  // Contiguous tensors as in a mapped file, none page-aligned, one long.
  const std::vector<CopyPiece> pieces = {
      {source_at(0x100010), 0, 0, 5000, false},
      {source_at(0x100010 + 5000), 1, 0, 40000, false},
      {source_at(0x100010 + 45000), 2, 0, 7, false},
      {source_at(0x900000), 3, 0, 100, false},  // another mapping: a gap
      {source_at(0x200000), 4, 0, 300, true},   // already page-locked
  };
  const auto batches = plan_pinned_chunks(pieces, chunk, page);
  expect_sound_pinning(pieces, batches, chunk, page);
  EXPECT_EQ(batches.back().pin_length, 0u) << "page-locked pieces are copied as they are";
}

TEST(CudaUploadPlan, RandomPinningPlansAreSound) {
  std::mt19937_64 rng(11);
  const std::size_t page = 4096;
  for (int round = 0; round < 200; ++round) {
    const std::size_t chunk = page * (1 + rng() % 8);
    std::vector<CopyPiece> pieces;
    std::uintptr_t at = 0x10000000 + (rng() % page);
    for (int i = 0, n = 1 + static_cast<int>(rng() % 30); i < n; ++i) {
      const std::size_t len = rng() % 4 == 0 ? rng() % 20 : rng() % (3 * chunk);
      pieces.push_back({source_at(at), static_cast<std::size_t>(i), 0, len, rng() % 7 == 0});
      at += len + (rng() % 5 == 0 ? rng() % (2 * page) : 0);  // mostly contiguous, sometimes a gap
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);  // the plan sorts by source
    SCOPED_TRACE(round);
    expect_sound_pinning(pieces, plan_pinned_chunks(pieces, chunk, page), chunk, page);
  }
}

// ---------------------------------------------------------------------------
// The staging budget. Sizes are a few pages: the CPU device really locks
// mappings (mlock), within RLIMIT_MEMLOCK, which may be 64 KiB.

class UploadStagingBudget : public ::testing::Test {
 protected:
  void SetUp() override { device_->set_wired_limit(4 * page_); }
  nuvec::MemoryStats stats() const { return device_->memory(); }

  const std::size_t page_ = nuvec::page_size();
  std::unique_ptr<nuvec::Device> device_ = std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), false);
};

TEST_F(UploadStagingBudget, CountsInWiredWithinTheLimit) {
  ASSERT_TRUE(device_->hold_staging(1, 3 * page_));
  EXPECT_EQ(stats().wired, 3 * page_);
  EXPECT_EQ(stats().wired_mapped, 0u);
  EXPECT_EQ(stats().active, 0u) << "host staging is no buffer of the device";
  ASSERT_TRUE(device_->hold_staging(2, page_)) << "exactly up to the limit";
  EXPECT_EQ(stats().wired, 4 * page_);
  device_->release_staging(2, page_);
  device_->release_staging(1, 3 * page_);
  EXPECT_EQ(stats().wired, 0u);
}

TEST_F(UploadStagingBudget, PastTheLimitIsRefusedAndChangesNothing) {
  ASSERT_TRUE(device_->hold_staging(1, 3 * page_));
  const nuvec::MemoryStats before = stats();
  EXPECT_FALSE(device_->hold_staging(2, 2 * page_));
  EXPECT_FALSE(device_->hold_staging(3, SIZE_MAX)) << "no overflow";
  EXPECT_EQ(stats(), before);
  device_->release_staging(1, 3 * page_);
  EXPECT_EQ(nuvec_test::invariant_violations(stats()), "");
}

// Staging and mappings share the wired limit: a mapping made while staging
// holds the room waits, and is wired when the staging goes.
TEST_F(UploadStagingBudget, AMappingWaitingForTheRoomIsWiredWhenTheStagingGoes) {
  nuvec_test::TempFile file(2 * page_ - 10, 5);
  ASSERT_TRUE(device_->hold_staging(1, 3 * page_));
  nuvec::MappedFile f = device_->map_file(file.path());
  EXPECT_EQ(stats().wired_mapped, 0u) << "no room while the staging holds it";
  EXPECT_EQ(stats().wired, 3 * page_);
  device_->release_staging(1, 3 * page_);
  EXPECT_EQ(stats().wired_mapped, 2 * page_);
  EXPECT_EQ(stats().wired, 2 * page_);
  // And the other way round: staging gets only the room the mapping leaves.
  EXPECT_FALSE(device_->hold_staging(2, 3 * page_));
  EXPECT_TRUE(device_->hold_staging(2, 2 * page_));
  device_->release_staging(2, 2 * page_);
}

// Staging cannot be unlocked from under its user: a limit lowered below it
// unwires mappings, and holds again once the staging is given back.
TEST_F(UploadStagingBudget, ALimitLoweredBelowTheStagingHoldsWhenItGoes) {
  ASSERT_TRUE(device_->hold_staging(1, 2 * page_));
  EXPECT_EQ(device_->set_wired_limit(page_), 4 * page_);
  EXPECT_EQ(stats().wired, 2 * page_) << "still held by its upload";
  device_->release_staging(1, 2 * page_);
  EXPECT_EQ(stats().wired, 0u);
  EXPECT_EQ(nuvec_test::invariant_violations(stats()), "");
}

TEST_F(UploadStagingBudget, TracedAsWireAndUnwire) {
  device_->start_trace();
  ASSERT_TRUE(device_->hold_staging(42, 3 * page_));
  device_->release_staging(42, 3 * page_);
  const auto trace = device_->trace();
  ASSERT_EQ(trace->events.size(), 2u);
  EXPECT_EQ(trace->events[0].kind, nuvec::TraceEventKind::wire);
  EXPECT_EQ(trace->events[0].id, 42u);
  EXPECT_EQ(trace->events[0].size, 3 * page_);
  EXPECT_EQ(trace->events[0].stats->wired, 3 * page_);
  EXPECT_EQ(trace->events[1].kind, nuvec::TraceEventKind::unwire);
  EXPECT_EQ(trace->events[1].stats->wired, 0u);
}

}  // namespace
