#include "io/safetensors/load_plan.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/safetensors/checkpoint_files.h"
#include "io/safetensors/header_format.h"
#include "io/safetensors/header_reader.h"
#include "io/safetensors/json_events.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::io::safetensors_detail {
namespace {

// Each tensor the index assigns to this shard must be in it.
void check_assigned(const std::filesystem::path& index, const std::map<std::string, IndexEntry>& assigned,
                    const FilePlan& plan) {
  std::unordered_map<std::string_view, std::size_t> in_file;
  for (std::size_t i = 0; i < plan.header.tensors.size(); ++i) in_file.emplace(plan.header.tensors[i].name, i);
  for (const auto& [name, entry] : assigned) {
    if (!in_file.contains(name)) {
      format_error(index, entry.index_offset,
                   fmt::format("the weight_map puts tensor {} in {}, which does not hold it", in_quotes(name),
                               plan.file.path().string()));
    }
  }
}

// The selected tensors, each needing its element's alignment to be used in
// place; a load through a filter maps only their pages.
void plan_placement(FilePlan& plan, bool whole_file) {
  const SafetensorsHeader& header = plan.header;
  plan.extents.reserve(plan.selected.size());
  for (std::size_t i : plan.selected) {
    const SafetensorsTensorInfo& t = header.tensors[i];
    plan.extents.push_back({header.data_start + t.begin, t.byte_size(), dtype_size(t.dtype), "tensor " + in_quotes(t.name)});
  }
  plan.placement = io::plan_placement(plan.file, plan.extents,
                                      {.map_scope = whole_file ? MapScope::whole_file : MapScope::tensors,
                                       .converted_on_host = {}});
}

}  // namespace

CheckpointPlan plan_checkpoint(const std::filesystem::path& path, const TensorFilter& filter) {
  const CheckpointFiles files = resolve_checkpoint(path);
  CheckpointPlan plan;
  plan.files.reserve(files.shards.size());
  for (const CheckpointShard& shard : files.shards) {
    InputFile file(shard.path);
    SafetensorsHeader header = read_header(file);
    FilePlan& fp = plan.files.emplace_back(std::move(file), std::move(header));
    if (shard.assigned) check_assigned(files.index, *shard.assigned, fp);
    for (std::size_t i = 0; i < fp.header.tensors.size(); ++i) {
      const std::string& name = fp.header.tensors[i].name;
      if (shard.assigned && !shard.assigned->contains(name)) continue;  // the index says it lives elsewhere
      if (filter.selects(name)) fp.selected.push_back(i);
    }
    plan_placement(fp, filter.selects_everything());
  }
  return plan;
}

void check_filter_names(const TensorFilter& filter, std::span<const CheckpointPlan> plans) {
  if (filter.names() == nullptr) return;
  std::set<std::string_view> found;
  for (const CheckpointPlan& plan : plans) {
    for (const FilePlan& file : plan.files) {
      for (std::size_t i : file.selected) found.insert(file.header.tensors[i].name);
    }
  }
  std::vector<std::string> missing;
  for (const std::string& name : *filter.names()) {
    if (!found.contains(name)) missing.push_back(in_quotes(name));
  }
  if (!missing.empty()) {
    const std::size_t shown = std::min<std::size_t>(missing.size(), 5);
    throw InvalidArgument(fmt::format("{} tensor(s) asked for are not in the checkpoint: {}{}", missing.size(),
                                      fmt::join(missing.begin(), missing.begin() + shown, ", "),
                                      missing.size() > shown ? ", ..." : ""));
  }
}

Footprint plan_footprint(const CheckpointPlan& plan) {
  Footprint total;
  // A load only adds: the peak rises by everything it holds at the end.
  for (const FilePlan& file : plan.files) total += file.placement.footprint();
  return total;
}

}  // namespace nuvec::io::safetensors_detail
