// load_safetensors: carrying out a plan, file by file. Whether a file's
// tensors are views of a mapping or read into one buffer is the plan's
// placement (io/tensor_placement.h, the same rule for every format).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "io/safetensors/json_events.h"
#include "io/safetensors/load_plan.h"
#include "io/tensor_placement.h"
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

// Maps the file or reads its selected tensors into one buffer, as planned.
LoadedFile load_file(Device& device, const FilePlan& plan) {
  PlacedTensors placed = place_tensors(device, plan.file, plan.placement, plan.extents);
  LoadedFile loaded;
  loaded.views.reserve(plan.selected.size());
  for (std::size_t k = 0; k < plan.selected.size(); ++k) {
    loaded.views.push_back(view_of(plan.header.tensors[plan.selected[k]], placed.bytes[k], placed.storage));
  }
  loaded.source.mapped_bytes = placed.mapped_bytes;
  loaded.source.buffer_bytes = placed.buffer_bytes;
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
  for (const FilePlan& file : plan.files) files += file.load_path() != LoadPath::none;
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
    LoadedFile loaded = load_file(device, file);
    loaded.source.path = file.file.path();
    loaded.source.load_path = file.load_path();
    loaded.source.tensor_count = loaded.views.size();
    loaded.source.metadata = file.header.metadata;
    metadata.insert(file.header.metadata.begin(), file.header.metadata.end());  // the first file's value stays
    std::move(loaded.views.begin(), loaded.views.end(), std::back_inserter(tensors));
    sources.push_back(std::move(loaded.source));
  }
  return SafetensorsFile(std::move(tensors), std::move(metadata), std::move(sources));
}

}  // namespace safetensors_detail

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
