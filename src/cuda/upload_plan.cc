#include <algorithm>
#include <cstdint>
#include <iterator>

#include "cuda/upload.h"

namespace nuvec::cuda::detail {

namespace {

std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

}  // namespace

std::vector<Batch> plan_batches(std::span<const CopyPiece> pieces, std::size_t slot_bytes) {
  std::vector<Batch> batches;
  std::size_t used = 0;  // bytes of the last batch's slot taken, padding included
  for (const CopyPiece& piece : pieces) {
    for (std::size_t done = 0; done < piece.length;) {
      const bool open = !batches.empty() && batches.back().direct == piece.direct && used < slot_bytes;
      const std::size_t offset = open ? align_up(used, kStagingAlignment) : 0;
      if (open && offset >= slot_bytes) {
        used = slot_bytes;  // full: the next round opens a new batch
        continue;
      }
      if (!open) {
        batches.push_back(Batch{.entries = {}, .bytes = 0, .last_tensor = piece.tensor, .direct = piece.direct});
      }
      const std::size_t take = std::min(piece.length - done, slot_bytes - offset);
      Batch& batch = batches.back();
      batch.entries.push_back({piece.part(done, take), offset});
      batch.bytes += take;
      batch.last_tensor = std::max(batch.last_tensor, piece.tensor);
      used = offset + take;
      done += take;
    }
  }
  return batches;
}

std::vector<Batch> plan_pinned_chunks(std::span<const CopyPiece> pieces, std::size_t chunk_bytes, std::size_t page) {
  std::vector<CopyPiece> direct, pinned;
  for (const CopyPiece& p : pieces) {
    if (p.length != 0) (p.direct ? direct : pinned).push_back(p);
  }
  std::sort(pinned.begin(), pinned.end(),
            [](const CopyPiece& a, const CopyPiece& b) { return a.source < b.source; });

  const auto floor_page = [page](std::uintptr_t a) { return a & ~(page - 1); };
  const auto ceil_page = [page](std::uintptr_t a) { return (a + page - 1) & ~(page - 1); };
  std::vector<Batch> batches;
  std::uintptr_t lo = 0, hi = 0;  // the open batch's pinned pages: [lo, hi)
  bool open = false;
  for (const CopyPiece& piece : pinned) {
    for (std::size_t done = 0; done < piece.length;) {
      const auto at = reinterpret_cast<std::uintptr_t>(piece.source + done);
      const std::size_t left = piece.length - done;
      std::size_t take = 0;
      if (open && at < hi) {
        take = std::min<std::size_t>(left, hi - at);  // inside pages already pinned for this batch
      } else if (open && floor_page(at) == hi && hi - lo < chunk_bytes) {
        take = std::min<std::size_t>(left, lo + chunk_bytes - at);  // the next pages: grow the batch
        hi = std::min<std::uintptr_t>(ceil_page(at + take), lo + chunk_bytes);
      } else {
        // A new batch, after a full one or a gap: at >= hi here, and hi is a
        // page boundary, so its pages are none of the last batch's.
        lo = floor_page(at);
        take = std::min<std::size_t>(left, lo + chunk_bytes - at);
        hi = ceil_page(at + take);
        batches.push_back(Batch{.entries = {}, .bytes = 0, .last_tensor = piece.tensor, .direct = true});
        open = true;
      }
      Batch& batch = batches.back();
      CopyPiece part = piece.part(done, take);
      part.direct = true;  // once locked
      batch.entries.push_back({part, 0});
      batch.bytes += take;
      batch.last_tensor = std::max(batch.last_tensor, piece.tensor);
      batch.pin_begin = reinterpret_cast<const std::byte*>(lo);
      batch.pin_length = hi - lo;
      done += take;
    }
  }
  std::vector<Batch> direct_batches = plan_batches(direct, chunk_bytes);
  batches.insert(batches.end(), std::make_move_iterator(direct_batches.begin()),
                 std::make_move_iterator(direct_batches.end()));
  return batches;
}

UploadPlan plan_upload(std::span<const CopyPiece> pieces, std::size_t chunk_bytes, std::size_t slot_bytes,
                       std::size_t page) {
  UploadPlan plan;
  const std::vector<Batch> batches =
      chunk_bytes == 0 ? plan_batches(pieces, slot_bytes) : plan_pinned_chunks(pieces, chunk_bytes, page);
  for (const Batch& batch : batches) {
    if (batch.direct && batch.pin_length == 0) {
      plan.direct.push_back(batch);
    } else if (chunk_bytes == 0) {
      plan.units.push_back(Unit{.pinned = {}, .staged = {batch}});
    } else {
      std::vector<CopyPiece> parts;
      parts.reserve(batch.entries.size());
      for (const Batch::Entry& e : batch.entries) {
        parts.push_back(e.piece);
        parts.back().direct = false;  // staged, should the staging side take it
      }
      plan.units.push_back(Unit{.pinned = batch, .staged = plan_batches(parts, slot_bytes)});
    }
  }
  return plan;
}

}  // namespace nuvec::cuda::detail
