// What loading a checkpoint will cost, computed from its headers alone, and
// the filter that says which tensors a load (or a footprint) takes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>

namespace nuvec::io {

// Which tensors to take: all of them (the default), those named, or those a
// predicate accepts. Loaders map or read only what it selects, so the rest
// count in no statistic.
class TensorFilter {
 public:
  TensorFilter() = default;
  TensorFilter(std::initializer_list<std::string> names) : TensorFilter(std::set<std::string>(names)) {}
  // Every name must be in the checkpoint: a missing one is InvalidArgument
  // (a typo should not load nothing quietly).
  explicit TensorFilter(std::set<std::string> names);
  explicit TensorFilter(std::function<bool(std::string_view name)> predicate);

  bool selects(std::string_view name) const;
  // True for the default filter: a load may then map whole files.
  bool selects_everything() const { return names_ == nullptr && predicate_ == nullptr; }
  // The names asked for, or null when the filter is a predicate or everything.
  const std::set<std::string, std::less<>>* names() const { return names_.get(); }

 private:
  std::shared_ptr<const std::set<std::string, std::less<>>> names_;
  std::function<bool(std::string_view)> predicate_;
};

// How one file's tensors are brought in, in every format (safetensors, npy,
// GGUF): the same rule for all.
enum class LoadPath {
  mapped,  // every tensor aligned for its element: views of a mapping of the file (or of the selected ranges)
  read,    // not: read once, with parallel positioned reads, into one buffer, each tensor at a 256-byte boundary
  none,    // no bytes selected: nothing mapped or allocated
};
std::string_view load_path_name(LoadPath path);

// What a load adds to a device's statistics, in bytes. Exact on a device
// whose cache holds no block that the load's buffers could reuse (a cache
// hit counts the cached block's size, which may be larger); a load frees
// nothing, so `peak_with_mapped` rises by mapped + active from a reset peak.
struct Footprint {
  std::size_t mapped = 0;  // mapping_size of mapped files, or their page-rounded ranges
  std::size_t active = 0;  // allocation_size of the buffers unaligned files are read into

  // The rise of peak_with_mapped after reset_peak(): a function of the two
  // above, so that it cannot disagree with them.
  std::size_t peak_with_mapped() const { return mapped + active; }

  Footprint& operator+=(const Footprint& other) {
    mapped += other.mapped;
    active += other.active;
    return *this;
  }
  friend bool operator==(const Footprint&, const Footprint&) = default;
};

// The footprint of loading each of `paths` with `filter`, summed: each path
// is what load_safetensors takes (a .safetensors file, a directory, or an
// index json). Reads headers only. FormatError for a broken header, IoError
// for a file that cannot be read, InvalidArgument for a named tensor that
// is in none of the files.
Footprint footprint(std::span<const std::filesystem::path> paths, const TensorFilter& filter = {});
Footprint footprint(const std::filesystem::path& path, const TensorFilter& filter = {});

}  // namespace nuvec::io
