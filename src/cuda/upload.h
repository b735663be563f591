// The plan of an upload (include/nuvec/cuda_upload.h): which bytes go to the
// device in which batch. Plain C++, tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace nuvec::cuda::detail {

// One contiguous host-to-device copy.
struct CopyPiece {
  const std::byte* source = nullptr;
  std::byte* destination = nullptr;
  std::size_t length = 0;
  bool direct = false;  // the source is page-locked: copied from where it is, without staging
  // Where the source is a read-only mapping of a file: that file (an index
  // into the upload's open files) and the source's offset in it, so that
  // staging can read the file instead of touching the mapping. -1: none.
  int file = -1;
  std::uint64_t file_offset = 0;

  // The `length` bytes from `offset` of this piece.
  CopyPiece part(std::size_t offset, std::size_t length) const {
    return {source + offset, destination + offset, length, direct, file, file_offset + offset};
  }
};

// What one pipeline carries at a time: staged pieces at `staging_offset`
// within its slot, or direct pieces, never both. A batch of a pinning plan
// also names the page-aligned source range to page-lock for it.
struct Batch {
  struct Entry {
    CopyPiece piece;
    std::size_t staging_offset = 0;  // where the piece sits in the slot (staged batches)
  };
  std::vector<Entry> entries;
  std::size_t bytes = 0;  // payload, without alignment padding
  bool direct = false;
  const std::byte* pin_begin = nullptr;  // pinning plans: [pin_begin, pin_begin + pin_length)
  std::size_t pin_length = 0;
};

// Pieces in staging slots start at multiples of this (DMA reads aligned lines).
inline constexpr std::size_t kStagingAlignment = 256;

// Cuts `pieces` into batches in order: a piece longer than `slot_bytes` is
// split into slot-sized parts; consecutive short pieces share a batch while
// they fit, each at a kStagingAlignment boundary. Direct pieces are cut the
// same way (so that several streams carry them) but batched apart. Zero-length
// pieces are dropped. slot_bytes must be a positive multiple of
// kStagingAlignment.
std::vector<Batch> plan_batches(std::span<const CopyPiece> pieces, std::size_t slot_bytes);

// The plan for copying straight from pageable sources that are page-locked
// a chunk at a time: pieces are taken in source-address order and cut so that
// each batch's pinned range (whole pages, at most `chunk_bytes`) overlaps no
// other batch's; a piece continues a batch only where its source does
// (contiguous pages). Pieces already page-locked (direct) are batched as
// plan_batches does, with no range to pin. `page` is a power of two and
// chunk_bytes a positive multiple of it.
std::vector<Batch> plan_pinned_chunks(std::span<const CopyPiece> pieces, std::size_t chunk_bytes, std::size_t page);

}  // namespace nuvec::cuda::detail
