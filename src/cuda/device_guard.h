// Makes a device current for a scope and restores the caller's current
// device after it: nuvec is called from threads (PyTorch's, the user's) whose
// current device is theirs to choose.
#pragma once

#include <cuda_runtime_api.h>

namespace nuvec::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal) {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == ordinal) return;  // the common case: nothing to do
    if (cudaSetDevice(ordinal) == cudaSuccess) previous_ = current;
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace nuvec::cuda
