// The plan of an upload (include/nuvec/cuda_upload.h): which bytes go to the
// device in which batch. Plain C++, tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace nuvec::cuda::detail {

// One contiguous host-to-device copy. Its destination is named, not
// addressed (`offset` bytes into destination `tensor`): an upload plans and
// starts reading before every device buffer exists.
struct CopyPiece {
  const std::byte* source = nullptr;  // null: the bytes are only in the file (`file` >= 0)
  std::size_t tensor = 0;
  std::size_t offset = 0;
  std::size_t length = 0;
  bool direct = false;  // the source is page-locked: copied from where it is, without staging
  // Where the bytes are in a file (an index into the upload's open files)
  // and at which offset, so that staging reads the file instead of touching
  // a mapping of it. -1: none.
  int file = -1;
  std::uint64_t file_offset = 0;

  // The `length` bytes from `at` of this piece.
  CopyPiece part(std::size_t at, std::size_t length) const {
    return {source == nullptr ? nullptr : source + at, tensor, offset + at, length, direct, file, file_offset + at};
  }
};

// What one staging slot (or one page-locked chunk) carries: staged pieces at
// `staging_offset` within the slot, or direct pieces, never both. A batch of
// a pinning plan also names the page-aligned source range to page-lock.
struct Batch {
  struct Entry {
    CopyPiece piece;
    std::size_t staging_offset = 0;  // where the piece sits in the slot (staged batches)
  };
  std::vector<Entry> entries;
  std::size_t bytes = 0;        // payload, without alignment padding
  std::size_t last_tensor = 0;  // the highest destination among the entries: copies wait until it exists
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
// plan_batches does, with no range to pin. Every piece needs a source.
// `page` is a power of two and chunk_bytes a positive multiple of it.
std::vector<Batch> plan_pinned_chunks(std::span<const CopyPiece> pieces, std::size_t chunk_bytes, std::size_t page);

// A stretch of the sources that goes to the device one of two ways,
// whichever side of the upload reaches it first: the registering pipeline
// page-locks its pages whole and the device reads them where they are
// (`pinned`), or the staging pipelines copy it through slots (`staged`, the
// same bytes cut into slot-sized batches).
struct Unit {
  Batch pinned;  // empty (no entries) where nothing is pinned
  std::vector<Batch> staged;
};

struct UploadPlan {
  std::vector<Unit> units;    // pinning plans: in source-address order
  std::vector<Batch> direct;  // pieces already page-locked: copied as they are
};

// The whole plan. chunk_bytes == 0: nothing is pinned, and each unit is one
// staged batch of plan_batches (pieces may lack a source: read from their
// file). Otherwise the units are plan_pinned_chunks' batches (every piece
// needs a source), each also cut into staged batches of at most slot_bytes.
UploadPlan plan_upload(std::span<const CopyPiece> pieces, std::size_t chunk_bytes, std::size_t slot_bytes,
                       std::size_t page);

}  // namespace nuvec::cuda::detail
