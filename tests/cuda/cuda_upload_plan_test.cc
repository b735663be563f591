// The upload plan (src/cuda/upload.h): every byte of every piece lands in
// exactly one batch entry, in order, within its slot, at aligned offsets;
// direct and staged pieces never share a batch. Plain C++: runs everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <random>
#include <vector>

#include "cuda/upload.h"

namespace {

using nuvec::cuda::detail::Batch;
using nuvec::cuda::detail::CopyPiece;
using nuvec::cuda::detail::kStagingAlignment;
using nuvec::cuda::detail::plan_batches;
using nuvec::cuda::detail::plan_pinned_chunks;

// Fake addresses: only arithmetic is done on them.
const std::byte* source_at(std::uintptr_t a) { return reinterpret_cast<const std::byte*>(a); }
std::byte* destination_at(std::uintptr_t a) { return reinterpret_cast<std::byte*>(a); }

// Checks the plan's invariants for `pieces` and `slot`.
void expect_sound(const std::vector<CopyPiece>& pieces, const std::vector<Batch>& batches, std::size_t slot) {
  std::size_t piece = 0, done = 0;  // the next byte expected, in piece order
  auto skip_empty = [&] {
    while (piece < pieces.size() && pieces[piece].length == 0) ++piece;
  };
  skip_empty();
  for (const Batch& batch : batches) {
    ASSERT_FALSE(batch.entries.empty());
    std::size_t bytes = 0, end = 0;
    for (const Batch::Entry& e : batch.entries) {
      ASSERT_LT(piece, pieces.size());
      const CopyPiece& p = pieces[piece];
      EXPECT_EQ(e.piece.source, p.source + done);
      EXPECT_EQ(e.piece.destination, p.destination + done);
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
  }
  EXPECT_EQ(piece, pieces.size()) << "bytes left out";
}

TEST(CudaUploadPlan, LongPiecesSplitShortOnesShareASlot) {
  const std::size_t slot = 4096;
  const std::vector<CopyPiece> pieces = {
      {source_at(0x10000), destination_at(0x900000), 10000, false},  // 3 batches: 4096, 4096, 1808
      {source_at(0x20000), destination_at(0xa00000), 100, false},    // shares the third
      {source_at(0x30000), destination_at(0xb00000), 0, false},      // dropped
      {source_at(0x40000), destination_at(0xc00000), 3, false},      // shares it too
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
      {source_at(0x1000), destination_at(0x9000), 1000, false},  // 1000: the next would start at 1024
      {source_at(0x2000), destination_at(0xa000), 10, false},
  };
  const auto batches = plan_batches(pieces, slot);
  expect_sound(pieces, batches, slot);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].entries[0].staging_offset, 0u);
}

TEST(CudaUploadPlan, DirectPiecesAreBatchedApart) {
  const std::size_t slot = 4096;
  const std::vector<CopyPiece> pieces = {
      {source_at(0x1000), destination_at(0x9000), 100, false},
      {source_at(0x2000), destination_at(0xa000), 9000, true},
      {source_at(0x3000), destination_at(0xb000), 100, true},
      {source_at(0x4000), destination_at(0xc000), 100, false},
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
      CopyPiece piece{source_at(at), destination_at(at + 0x10000000), len, rng() % 5 == 0};
      if (!piece.direct && rng() % 2 == 0) {  // some read from a file
        piece.file = static_cast<int>(rng() % 3);
        piece.file_offset = rng() % (std::uint64_t{1} << 40);
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
  std::map<std::uintptr_t, std::size_t> copied;  // source address -> length, to check coverage
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> pinned;
  for (const Batch& batch : batches) {
    ASSERT_TRUE(batch.direct);
    std::size_t bytes = 0;
    for (const Batch::Entry& e : batch.entries) {
      const auto s = reinterpret_cast<std::uintptr_t>(e.piece.source);
      if (batch.pin_length != 0) {
        const auto lo = reinterpret_cast<std::uintptr_t>(batch.pin_begin);
        EXPECT_GE(s, lo);
        EXPECT_LE(s + e.piece.length, lo + batch.pin_length) << "an entry outside its pinned range";
      }
      EXPECT_TRUE(copied.emplace(s, e.piece.length).second) << "a byte copied twice";
      bytes += e.piece.length;
    }
    EXPECT_EQ(batch.bytes, bytes);
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
      done += it->second;
    }
    EXPECT_EQ(done, p.length);
  }
}

TEST(CudaUploadPlan, PinnedChunksNeverShareAPage) {
  const std::size_t page = 4096, chunk = 4 * page;
  // Contiguous tensors as in a mapped file, none page-aligned, one long.
  const std::vector<CopyPiece> pieces = {
      {source_at(0x100010), destination_at(0x9000000), 5000, false},
      {source_at(0x100010 + 5000), destination_at(0xa000000), 40000, false},
      {source_at(0x100010 + 45000), destination_at(0xb000000), 7, false},
      {source_at(0x900000), destination_at(0xc000000), 100, false},  // another mapping: a gap
      {source_at(0x200000), destination_at(0xd000000), 300, true},   // already page-locked
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
      pieces.push_back({source_at(at), destination_at(at + 0x40000000), len, rng() % 7 == 0});
      at += len + (rng() % 5 == 0 ? rng() % (2 * page) : 0);  // mostly contiguous, sometimes a gap
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);  // the plan sorts by source
    SCOPED_TRACE(round);
    expect_sound_pinning(pieces, plan_pinned_chunks(pieces, chunk, page), chunk, page);
  }
}

}  // namespace
