// Where a checkpoint file's tensors live once loaded: the one decision every
// loader (safetensors, npy, GGUF) leaves to this unit. In place, as views of
// one mapping of the file, when every tensor with bytes lies where its
// readers can use it (at a multiple of its element's alignment); otherwise
// read once, with parallel positioned reads (read_ranges.h), into one buffer
// where each tensor starts at a 256-byte boundary, since a view of a
// misaligned tensor would make every consumer copy it again.
//
// Two steps, so that a footprint and a load cannot disagree: planning reads
// nothing and touches no device (a format's footprint function is the plan's
// costs); placing carries the plan out, and a refusal (memory limit, a file
// that changed) changes no statistic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nuvec/device.h"
#include "nuvec/input_file.h"
#include "nuvec/io/footprint.h"
#include "nuvec/io/tensor.h"
#include "nuvec/mapped_file.h"

namespace nuvec::io {

// Where tensors start in the buffer of the read path: aligned for any dtype
// and for vector loads (kSafetensorsAlignment is this value).
inline constexpr std::uint64_t kReadBufferAlignment = 256;

// One tensor's bytes in the file, as its (already checked) header says.
struct TensorExtent {
  std::uint64_t file_offset = 0;
  std::uint64_t length = 0;
  std::uint64_t alignment = 1;  // what its readers need of its address (its element's size, at most 8 for ggml blocks)
  std::string what;             // for errors: "tensor \"x\""
};

// What a mapping covers: the whole file (a plain load), or only the pages of
// the tensors taken (a load through a filter: the others count nowhere).
enum class MapScope { whole_file, tensors };

struct PlacementRules {
  MapScope map_scope = MapScope::whole_file;
  // Non-empty when the loader changes the bytes after reading them (npy data
  // in the other byte order): they are then read, never mapped, and this
  // says why, for the error on a device whose memory the host cannot write
  // ("its elements are in the other byte order and must be swapped on the host").
  std::string converted_on_host;
};

struct TensorPlacement {
  LoadPath path = LoadPath::none;
  MapScope map_scope = MapScope::whole_file;
  std::string converted_on_host;  // as PlacementRules says: non-empty, the read path is for a conversion

  // LoadPath::mapped with MapScope::tensors: the ranges to map.
  std::vector<FileRange> map_ranges;
  std::size_t mapped_bytes = 0;  // what the mapping will count in `mapped`

  // LoadPath::read: where each extent goes in the one buffer (parallel to the extents).
  std::vector<std::uint64_t> buffer_offsets;
  std::uint64_t buffer_length = 0;
  std::size_t buffer_bytes = 0;  // allocation_size(buffer_length): what it will count in `active`

  // What placing will add to the statistics (exact on a device whose cache
  // holds no block the buffer could reuse).
  Footprint footprint() const { return {.mapped = mapped_bytes, .active = buffer_bytes}; }
};

// Plans where `extents` of `file` go. FormatError (naming the file) for an
// extent past the end of the file: each format's parser refuses those
// first, so this is a second guard, not the first.
TensorPlacement plan_placement(const InputFile& file, std::span<const TensorExtent> extents,
                               const PlacementRules& rules = {});

// The tensors' bytes once placed.
struct PlacedTensors {
  std::vector<std::span<const std::byte>> bytes;  // parallel to the extents; empty for an extent of no bytes
  Storage storage;                                // the mapping or the buffer (null for LoadPath::none)
  // LoadPath::read: the whole buffer, writable, for a conversion in place
  // before the views are handed out (nothing else holds it yet).
  std::span<std::byte> buffer;
  std::size_t mapped_bytes = 0;  // what it counts in `mapped`
  std::size_t buffer_bytes = 0;  // what it counts in `active`
};

// Carries out `plan` (from plan_placement over the same `extents` and
// `file`) on `device`. FormatError if the file changed size since it was
// opened (checked before anything is mapped or allocated, and again after);
// OutOfMemory past the memory limit; IoError if it cannot be read;
// InvalidArgument for a conversion on a device whose memory the host cannot
// write. A refusal changes no statistic.
PlacedTensors place_tensors(Device& device, const InputFile& file, const TensorPlacement& plan,
                            std::span<const TensorExtent> extents);

}  // namespace nuvec::io
