// A load in two steps: planning (open every file, parse and check every
// header, decide per file whether to map or read and what each will cost)
// touches no device; carrying the plan out maps or allocates. footprint()
// is the plan's costs, so prediction and load cannot drift apart, and a
// refused checkpoint is refused before anything is counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/tensor_placement.h"
#include "nuvec/input_file.h"
#include "nuvec/device.h"
#include "nuvec/io/footprint.h"
#include "nuvec/io/safetensors.h"

namespace nuvec::io::safetensors_detail {

struct FilePlan {
  FilePlan(InputFile opened, SafetensorsHeader parsed) : file(std::move(opened)), header(std::move(parsed)) {}

  InputFile file;  // kept open to see whether it changed before mapping
  SafetensorsHeader header;
  std::vector<std::size_t> selected;  // indices into header.tensors, in header order
  std::vector<TensorExtent> extents;  // the selected tensors' bytes, parallel to `selected`
  TensorPlacement placement;          // mapped or read, and what each costs (io/tensor_placement.h)

  LoadPath load_path() const { return placement.path; }
};

struct CheckpointPlan {
  std::vector<FilePlan> files;
};

// Plans loading `path` (as load_safetensors takes it) with `filter`. Does not
// check that names the filter asks for exist; check_filter_names does, over
// every plan of one load or footprint.
CheckpointPlan plan_checkpoint(const std::filesystem::path& path, const TensorFilter& filter);
void check_filter_names(const TensorFilter& filter, std::span<const CheckpointPlan> plans);

// What carrying out `plan` will add to the statistics.
Footprint plan_footprint(const CheckpointPlan& plan);

// Carries out `plan`: maps or reads each file. FormatError if a file changed
// size since it was planned.
SafetensorsFile load_planned(Device& device, CheckpointPlan& plan);

}  // namespace nuvec::io::safetensors_detail
