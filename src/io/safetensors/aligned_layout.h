// The layout nuvec writes: the reference writer's (Rust safetensors,
// `prepare` in safetensors/src/tensor.rs, behind safetensors.torch.save_file
// and safetensors.numpy.save_file). Tensors sorted by descending dtype in
// the reference's order (wider elements first), then by name; data back to
// back in that order; the JSON compact, "__metadata__" first, then the
// tensors in data order, padded with spaces to a multiple of 8 bytes. Every
// element size divides 8 and every tensor's byte size, and sizes only fall
// along the data, so each tensor starts at a multiple of its element size:
// nuvec maps the file, and every other reader sees exactly the tensors
// written (no gaps, no extra tensors).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "nuvec/io/tensor.h"

namespace nuvec::io::safetensors_detail {

struct LayoutTensor {
  std::string name;
  DType dtype = DType::U8;
  std::vector<std::uint64_t> shape;
  std::uint64_t byte_size = 0;
};

struct AlignedLayout {
  std::string prefix;                 // the 8-byte length and the padded JSON: all before the data
  std::vector<std::size_t> order;     // indices of the given tensors, in data order
  std::vector<std::uint64_t> begins;  // each given tensor's offset from the data start (by given index)
  std::uint64_t data_length = 0;      // the file is prefix + this

  std::uint64_t file_size() const { return prefix.size() + data_length; }
};

// The reference writer's rank of a dtype: its position in the Rust
// `Dtype` enum, which "MUST be in increasing alignment order"; the writer
// sorts by it, descending.
int reference_dtype_rank(DType dtype);

// Lays out `tensors` (in any order) as the reference writer would.
// InvalidArgument for a duplicate name, "__metadata__", a name of nuvec's
// old padding tensors (its reader hides them), or text that is not UTF-8.
AlignedLayout make_aligned_layout(std::span<const LayoutTensor> tensors,
                                  const std::map<std::string, std::string>& metadata);

}  // namespace nuvec::io::safetensors_detail
