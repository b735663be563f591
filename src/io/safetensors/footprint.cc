// footprint(): the costs of the plan a load would carry out.
#include "nuvec/io/footprint.h"

#include <vector>

#include "io/safetensors/load_plan.h"

namespace nuvec::io {

Footprint footprint(std::span<const std::filesystem::path> paths, const TensorFilter& filter) {
  std::vector<safetensors_detail::CheckpointPlan> plans;
  plans.reserve(paths.size());
  for (const std::filesystem::path& path : paths) plans.push_back(safetensors_detail::plan_checkpoint(path, filter));
  safetensors_detail::check_filter_names(filter, plans);
  Footprint total;
  for (const auto& plan : plans) total += safetensors_detail::plan_footprint(plan);
  return total;
}

Footprint footprint(const std::filesystem::path& path, const TensorFilter& filter) {
  return footprint(std::span(&path, 1), filter);
}

}  // namespace nuvec::io
