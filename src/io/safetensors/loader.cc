// load_safetensors: carrying out a plan. Aligned files become views of one
// mapping (no copy: the page cache is the only copy); unaligned ones are
// read once into one buffer, since a view of a misaligned tensor would make
// every consumer copy it again (io/read_ranges.h: parallel reads, or on a
// GPU page-locked staging).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "io/safetensors/json_events.h"
#include "io/safetensors/load_plan.h"
#include "io/read_ranges.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::io {
namespace safetensors_detail {
namespace {

struct LoadedFile {
  std::vector<TensorView> views;
  SafetensorsSource source;
};

TensorView view_of(const SafetensorsTensorInfo& t, std::span<const std::byte> bytes, Storage storage) {
  return TensorView{t.name, t.dtype, t.shape, bytes, std::move(storage)};
}

// The file must still be what was parsed: a file that shrank would fault on
// access through the mapping; one that grew or was rewritten may no longer
// match its header.
void check_file_size(const FilePlan& plan, std::uint64_t mapped_size) {
  plan.file.check_unchanged();
  if (mapped_size != plan.header.file_size) {
    format_error(plan.file.path(), std::min(mapped_size, plan.header.file_size),
                 fmt::format("the file changed size while being loaded ({} bytes when parsed, {} when mapped)",
                             plan.header.file_size, mapped_size));
  }
}

LoadedFile map_tensors(Device& device, FilePlan& plan) {
  // Checked before mapping too, so a file that has already changed costs
  // nothing in any statistic.
  plan.file.check_unchanged();
  MappedFile mapping;
  try {
    mapping = plan.whole_file ? device.map_file(plan.file.fd(), plan.file.path())
                                 : device.map_ranges(plan.file.fd(), plan.file.path(), plan.ranges);
  } catch (const InvalidArgument&) {
    plan.file.check_unchanged();  // ranges past the end: the file shrank just now
    throw;
  }
  check_file_size(plan, mapping.file_size());

  LoadedFile loaded;
  const Storage storage = mapping.share();
  for (std::size_t i : plan.selected) {
    const SafetensorsTensorInfo& t = plan.header.tensors[i];
    const auto bytes = t.byte_size() == 0 ? std::span<const std::byte>{}
                                          : mapping.range(plan.header.data_start + t.begin, t.byte_size());
    loaded.views.push_back(view_of(t, bytes, storage));
  }
  loaded.source.mapped_bytes = mapping.mapped_bytes();
  return loaded;
}

LoadedFile read_tensors(Device& device, FilePlan& plan) {
  std::vector<RangeRead> ranges;
  ranges.reserve(plan.selected.size());
  for (std::size_t k = 0; k < plan.selected.size(); ++k) {
    const SafetensorsTensorInfo& t = plan.header.tensors[plan.selected[k]];
    ranges.push_back({plan.header.data_start + t.begin, static_cast<std::size_t>(t.byte_size()),
                      static_cast<std::size_t>(plan.buffer_offsets[k]), "tensor " + in_quotes(t.name)});
  }
  Buffer buffer = read_ranges(device, plan.file, static_cast<std::size_t>(plan.buffer_length), ranges);

  LoadedFile loaded;
  loaded.source.buffer_bytes = buffer.capacity();
  const auto holder = std::make_shared<const Buffer>(std::move(buffer));
  for (std::size_t k = 0; k < plan.selected.size(); ++k) {
    const SafetensorsTensorInfo& t = plan.header.tensors[plan.selected[k]];
    const std::span<const std::byte> bytes(holder->data() + plan.buffer_offsets[k],
                                           static_cast<std::size_t>(t.byte_size()));
    loaded.views.push_back(view_of(t, bytes, holder));
  }
  return loaded;
}

// A checkpoint of several files is refused whole, before any is mapped or
// read: mapping shard 1 and then being refused at shard 2 would leave
// peak_with_mapped raised by shard 1 (a peak is never lowered), and the
// contract is that a refusal changes no statistic. The plan knows every
// file's cost, so the sum is checked against the limit up front. (One file
// is one mapping or one buffer, which the allocator refuses whole itself.)
// A thread that allocates between this check and the last shard's mapping
// can still have a later shard refused; the check is exact for one thread.
void check_checkpoint_fits(const Device& device, const CheckpointPlan& plan) {
  std::size_t files = 0;
  for (const FilePlan& file : plan.files) files += file.load_path != LoadPath::none;
  if (files < 2) return;
  const Footprint cost = plan_footprint(plan);
  const MemoryStats s = device.memory();
  const std::size_t held = s.active + s.mapped;
  const std::size_t adds = cost.mapped + cost.active;
  if (adds <= s.memory_limit && held <= s.memory_limit - adds) return;
  const std::filesystem::path& first = plan.files.front().file.path();
  throw OutOfMemory(
      fmt::format("cannot load the {} files of the checkpoint in {} (mapped {} + read {}): active {} + mapped {} + {} "
                  "would pass the memory limit of {} (raise it with Device::set_memory_limit or "
                  "NUVEC_MEMORY_LIMIT, or load fewer tensors with a filter); nothing was mapped or read",
                  files, first.parent_path().string(), format_bytes(cost.mapped), format_bytes(cost.active),
                  format_bytes(s.active), format_bytes(s.mapped), format_bytes(adds), format_bytes(s.memory_limit)),
      adds, s);
}

}  // namespace

SafetensorsFile load_planned(Device& device, CheckpointPlan& plan) {
  check_checkpoint_fits(device, plan);
  std::vector<TensorView> tensors;
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsSource> sources;
  for (FilePlan& file : plan.files) {
    LoadedFile loaded;
    if (file.load_path == LoadPath::mapped) {
      loaded = map_tensors(device, file);
    } else if (file.load_path == LoadPath::read) {
      loaded = read_tensors(device, file);
    } else {
      for (std::size_t i : file.selected) loaded.views.push_back(view_of(file.header.tensors[i], {}, nullptr));
    }
    loaded.source.path = file.file.path();
    loaded.source.load_path = file.load_path;
    loaded.source.tensor_count = loaded.views.size();
    loaded.source.metadata = file.header.metadata;
    metadata.insert(file.header.metadata.begin(), file.header.metadata.end());  // the first file's value stays
    std::move(loaded.views.begin(), loaded.views.end(), std::back_inserter(tensors));
    sources.push_back(std::move(loaded.source));
  }
  return SafetensorsFile(std::move(tensors), std::move(metadata), std::move(sources));
}

}  // namespace safetensors_detail

std::string_view load_path_name(LoadPath path) {
  switch (path) {
    case LoadPath::mapped:
      return "mapped";
    case LoadPath::read:
      return "read";
    case LoadPath::none:
      return "none";
  }
  return "?";
}

SafetensorsFile::SafetensorsFile(std::vector<TensorView> tensors, std::map<std::string, std::string> metadata,
                                 std::vector<SafetensorsSource> sources)
    : tensors_(std::move(tensors)), metadata_(std::move(metadata)), sources_(std::move(sources)) {
  for (std::size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorView& SafetensorsFile::at(std::string_view name) const {
  if (const TensorView* t = find(name)) return *t;
  throw InvalidArgument(fmt::format("no tensor {} among the {} loaded", safetensors_detail::in_quotes(name),
                                    tensors_.size()));
}

SafetensorsFile load_safetensors(Device& device, const std::filesystem::path& path, const LoadOptions& options) {
  safetensors_detail::CheckpointPlan plan = safetensors_detail::plan_checkpoint(path, options.filter);
  safetensors_detail::check_filter_names(options.filter, std::span(&plan, 1));
  return safetensors_detail::load_planned(device, plan);
}

}  // namespace nuvec::io
