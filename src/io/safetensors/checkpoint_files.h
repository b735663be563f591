// Which files a checkpoint path stands for: one .safetensors file, or the
// shards of a model.safetensors.index.json, each with the tensors the index
// assigns to it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nuvec::io::safetensors_detail {

// A tensor the index assigns to a shard, and where the index says so.
struct IndexEntry {
  std::uint64_t index_offset = 0;  // file offset of its name in the index
};

struct CheckpointShard {
  std::filesystem::path path;
  // For a sharded checkpoint, the tensors the weight_map assigns to this
  // shard (only these are taken from it); empty optional: all of the file's.
  std::optional<std::map<std::string, IndexEntry>> assigned;
};

struct CheckpointFiles {
  std::filesystem::path index;  // empty for a single file
  std::vector<CheckpointShard> shards;  // by file name
};

// Resolves `path`: a .safetensors file; a directory with model.safetensors
// (preferred, as transformers does) or model.safetensors.index.json; or an
// index (any path ending in .json). InvalidArgument for a directory holding
// neither, IoError for an index that cannot be read, FormatError for an index
// that is not {"weight_map": {name: shard}} with shard paths inside its
// directory (relative, no "..") and no name twice.
CheckpointFiles resolve_checkpoint(const std::filesystem::path& path);

// The cap on an index file: far above real ones (a few hundred KB), and
// what bounds the memory a hostile one can cost.
inline constexpr std::uint64_t kMaxIndexBytes = 100'000'000;

}  // namespace nuvec::io::safetensors_detail
