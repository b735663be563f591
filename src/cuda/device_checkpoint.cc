// DeviceCheckpoint: the result of an upload; plain C++.
#include <fmt/format.h>

#include "nuvec/cuda_upload.h"
#include "nuvec/error.h"

namespace nuvec::cuda {

DeviceCheckpoint::DeviceCheckpoint(std::vector<DeviceTensor> tensors, UploadReport report)
    : tensors_(std::move(tensors)), report_(report) {
  for (std::size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

const DeviceTensor* DeviceCheckpoint::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const DeviceTensor& DeviceCheckpoint::at(std::string_view name) const {
  if (const DeviceTensor* t = find(name)) return *t;
  throw InvalidArgument(fmt::format("the uploaded checkpoint has no tensor named '{}' ({} tensors)", name,
                                    tensors_.size()));
}

}  // namespace nuvec::cuda
