// What `nuvec inspect` says about one checkpoint file: its format, its
// tensors, and what loading it would cost in each statistic.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nuvec/io/tensor.h"

namespace nuvec::tool {

struct TensorSummary {
  std::string name;
  std::string dtype;  // "BF16", or a ggml block type such as "Q4_K"
  std::vector<std::uint64_t> shape;
  std::uint64_t bytes = 0;
  std::uint64_t file_offset = 0;
  bool aligned = false;  // usable in place from a mapping
};

struct CheckpointSummary {
  std::filesystem::path path;
  std::string format;  // "safetensors", "npy", "gguf"
  std::uint64_t file_bytes = 0;
  std::vector<TensorSummary> tensors;
  std::string load_path;  // "mapped", "read", "mapped and read" (shards), "none"
  // What a load adds to a fresh device: mapped, active, and the rise of peak_with_mapped.
  std::uint64_t mapped = 0;
  std::uint64_t active = 0;
  std::uint64_t peak_with_mapped = 0;
  std::string how_measured;  // how the figures were found: from the headers, for every format
  // GGUF: whether `nuvec run` takes it as a model, and with what (or why not).
  std::string model_note;
};

// Recognises the format by name (.safetensors, .index.json, a directory,
// .npy, .gguf) or else by its first bytes. FormatError / IoError as the
// readers raise them; InvalidArgument for a file of no known format.
CheckpointSummary summarise_checkpoint(const std::filesystem::path& path);

}  // namespace nuvec::tool
