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

void choose_load_path(FilePlan& plan, bool whole_file) {
  const SafetensorsHeader& header = plan.header;
  bool has_bytes = false;
  bool aligned = true;
  for (std::size_t i : plan.selected) {
    has_bytes = has_bytes || header.tensors[i].byte_size() > 0;
    aligned = aligned && header.tensor_aligned(header.tensors[i]);
  }
  if (!has_bytes) {
    plan.load_path = LoadPath::none;
  } else if (aligned) {
    plan.load_path = LoadPath::mapped;
    plan.whole_file = whole_file;
    if (whole_file) {
      plan.mapped_bytes = mapping_size(header.file_size);
    } else {
      for (std::size_t i : plan.selected) {
        const SafetensorsTensorInfo& t = header.tensors[i];
        if (t.byte_size() > 0) plan.ranges.push_back({header.data_start + t.begin, t.byte_size()});
      }
      plan.mapped_bytes = mapping_size(std::span<const FileRange>(plan.ranges));  // as Device::map_ranges counts
    }
  } else {
    // One buffer, each tensor at a 256-byte boundary: aligned for any dtype
    // and for vector loads. Lengths are bounded by the file's size.
    plan.load_path = LoadPath::read;
    std::uint64_t at = 0;
    for (std::size_t i : plan.selected) {
      at = align_up(at, kSafetensorsAlignment);
      plan.buffer_offsets.push_back(at);
      at += header.tensors[i].byte_size();
    }
    plan.buffer_length = at;
    plan.buffer_bytes = allocation_size(static_cast<std::size_t>(at)).value_or(SIZE_MAX);
  }
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
    choose_load_path(fp, filter.selects_everything());
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
  for (const FilePlan& file : plan.files) {
    total.mapped += file.load_path == LoadPath::mapped ? file.mapped_bytes : 0;
    total.active += file.load_path == LoadPath::read ? file.buffer_bytes : 0;
  }
  // A load only adds: the peak rises by everything it holds at the end.
  return total;
}

}  // namespace nuvec::io::safetensors_detail
