// safetensors checkpoints: parsing headers as hostile input, loading (one
// file or a sharded directory) as zero-copy views of a mapping or, for files
// whose tensors are not aligned, one allocator buffer; saving in the
// reference writer's layout; aligning files and sharded checkpoints in place.
//
// The format: 8 bytes of little-endian header length N, N bytes of JSON
// ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {string: string}}), then the data; offsets are relative to
// the data start, 8 + N.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/device.h"
#include "nuvec/io/footprint.h"
#include "nuvec/io/tensor.h"

namespace nuvec::io {

// The largest header accepted, as the reference implementation (Rust
// safetensors) and MLX: 100 MB.
inline constexpr std::uint64_t kSafetensorsMaxHeaderLength = 100'000'000;

// Tensors that a load reads into a buffer (files not aligned) start at
// multiples of this within it. (Files nuvec wrote before it wrote the
// reference layout had every tensor at such a boundary, gaps declared as
// padding tensors: see SafetensorsHeader::tensors.)
inline constexpr std::uint64_t kSafetensorsAlignment = 256;

// One tensor as its header declares it.
struct SafetensorsTensorInfo {
  std::string name;
  DType dtype = DType::U8;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;  // data_offsets, relative to the data start
  std::uint64_t end = 0;
  std::uint64_t header_offset = 0;  // file offset of its name in the header (for errors)

  std::uint64_t byte_size() const { return end - begin; }
};

struct SafetensorsHeader {
  // In the order the header lists them. The padding tensors that nuvec
  // wrote between tensors before it wrote the reference layout (U8 zeros
  // named "__nuvec_padding_<begin>__", filling up to 256-byte boundaries)
  // are checked like any other, then left out and counted.
  std::vector<SafetensorsTensorInfo> tensors;
  std::size_t padding_tensors = 0;
  std::map<std::string, std::string> metadata;  // __metadata__ (null or absent: empty)
  std::uint64_t header_length = 0;              // N
  std::uint64_t data_start = 0;                 // 8 + N
  std::uint64_t file_size = 0;

  // True when every tensor with bytes starts at a file offset that is a
  // multiple of its element size, so it can be used in place from a mapping.
  bool tensor_aligned(const SafetensorsTensorInfo& tensor) const;
  bool aligned() const;
};

// Parses the header at the start of a file of `file_size` bytes; `prefix`
// holds the file's first bytes, at least 8 + N. Every flaw is a FormatError
// naming `name`, the file offset and the reason: a short file; a header
// length past the end of the file or over 100 MB; invalid JSON or UTF-8; a
// header that is not an object; entries that are not objects; an unknown
// dtype; shapes with negative, non-integer or overflowing dimensions (or more
// than 64); a byte size that is not end - begin; offsets reversed or past the
// data; overlapping tensors; duplicate names or fields; __metadata__ that is
// not an object of strings; a prefix shorter than the header. Unknown fields
// of a tensor entry are ignored, as the reference implementation does.
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> prefix, std::uint64_t file_size,
                                           const std::filesystem::path& name);

// Reads and parses the header of the file at `path` (reading only 8 + N
// bytes). IoError if it cannot be read.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

struct LoadOptions {
  TensorFilter filter;  // which tensors to load: all by default
};

// One file of a loaded checkpoint.
struct SafetensorsSource {
  std::filesystem::path path;
  LoadPath load_path = LoadPath::none;
  std::size_t mapped_bytes = 0;  // what its mapping counts in `mapped`
  std::size_t buffer_bytes = 0;  // what its buffer counts in `active`
  std::size_t tensor_count = 0;  // tensors taken from it
  std::map<std::string, std::string> metadata;
};

// A loaded checkpoint. The views own their storage: they stay valid after
// this object is gone, and a mapping (or buffer) goes when its last view does.
class SafetensorsFile {
 public:
  SafetensorsFile() = default;
  SafetensorsFile(std::vector<TensorView> tensors, std::map<std::string, std::string> metadata,
                  std::vector<SafetensorsSource> sources);

  // In file order: shards by file name, tensors in header order within each.
  const std::vector<TensorView>& tensors() const { return tensors_; }
  std::size_t size() const { return tensors_.size(); }
  // The tensor called `name`, or null.
  const TensorView* find(std::string_view name) const;
  // The tensor called `name`; InvalidArgument if there is none.
  const TensorView& at(std::string_view name) const;
  // __metadata__ of every file, merged (the first file that has a key wins).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<SafetensorsSource>& sources() const { return sources_; }

 private:
  std::vector<TensorView> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsSource> sources_;
};

// Loads a checkpoint: `path` is a .safetensors file, a directory holding
// model.safetensors or model.safetensors.index.json, or such an index
// ("weight_map": tensor name -> shard file; shard paths stay inside the
// index's directory, and each tensor must be in the shard it is listed for).
// Every header is parsed and checked before anything is mapped or allocated,
// so a refused checkpoint leaves the device's statistics as they were.
// FormatError for a broken file (also one that changes size while being
// loaded), IoError for one that cannot be read, OutOfMemory past the memory
// limit, InvalidArgument for a filter naming a tensor that is not there.
SafetensorsFile load_safetensors(Device& device, const std::filesystem::path& path,
                                 const LoadOptions& options = {});

// Writes `tensors` and `metadata` to `path` atomically (a temporary file in
// the same directory, flushed, then renamed over `path`), in the layout
// Python's safetensors.torch.save_file and safetensors.numpy.save_file write:
// tensors sorted by descending dtype (wider elements first, the reference
// writer's order), then by name; their data back to back; the header
// compact, "__metadata__" first, padded with spaces to a multiple of 8
// bytes. So every tensor starts at a multiple of its element size (nuvec
// maps the file), other readers see exactly these tensors, and the bytes are
// the reference writer's for the same tensors (with more than one metadata
// entry the reference's order of them is its hash map's; nuvec's is sorted).
// InvalidArgument for duplicate or reserved names ("__metadata__", nuvec's
// old "__nuvec_padding_" names), names that are not UTF-8, ggml block types,
// or views whose bytes do not match dtype and shape.
void save_safetensors(const std::filesystem::path& path, std::span<const TensorView> tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Rewrites the safetensors file `in` as `out` in the layout save_safetensors
// writes (same tensors and metadata; nuvec's old padding tensors dropped),
// copying the data in pieces rather than holding the file in memory. `out`
// may be `in`: it is replaced atomically, and views of a mapping of the old
// file stay valid.
void align_safetensors(const std::filesystem::path& in, const std::filesystem::path& out);

// What align_checkpoint did, or (dry run) would do, to one file.
struct FileAlignment {
  std::filesystem::path path;
  // Why the file is (or would be) rewritten; empty when it is left as it is,
  // because it already loads mapped and other readers see exactly its tensors.
  std::vector<std::string> reasons;
  std::uint64_t bytes_before = 0;
  std::uint64_t bytes_after = 0;  // bytes_before when left as it is
  // Loading this file alone (all its tensors) on a fresh device, as it was
  // and as it is after the rewrite. Zero for an index.
  Footprint before;
  Footprint after;
  LoadPath load_before = LoadPath::none;
  LoadPath load_after = LoadPath::none;

  bool changes() const { return !reasons.empty(); }
};

struct CheckpointAlignment {
  std::vector<FileAlignment> files;    // the file, or each shard of the index (by file name)
  std::optional<FileAlignment> index;  // model.safetensors.index.json, for a sharded checkpoint
  bool dry_run = false;

  std::size_t changed_files() const;
};

struct AlignOptions {
  bool dry_run = false;  // say what would change, write nothing
};

// Aligns a checkpoint in place: `path` is what load_safetensors takes (a
// .safetensors file, a directory holding model.safetensors or
// model.safetensors.index.json, or such an index). Every file is checked
// first, so a broken one (FormatError, IoError) stops the run before
// anything is written. Then each file that needs it is rewritten as
// align_safetensors does, atomically and on its own: a failure part-way
// (IoError: a full disk, say) leaves that file and every later one as it
// was, and the ones already rewritten hold the same tensors, so the
// checkpoint loads at every moment. The index is rewritten (atomically)
// only if its weight_map lists nuvec's old padding tensors, which the
// aligned shards no longer declare; tensor names and shard names stay.
CheckpointAlignment align_checkpoint(const std::filesystem::path& path, const AlignOptions& options = {});

}  // namespace nuvec::io
