// The CUDA backend's face to the rest of nuvec, in plain C++ (no CUDA
// headers), so that device.cc and the tests build the same with or without
// the toolkit: without it (no_cuda.cc) there are no devices.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "memory/backend.h"

namespace nuvec::cuda {

// How many CUDA devices this process can use: 0 without a GPU, without a
// driver, or when nuvec was built without CUDA. `why`, when given, gets the
// reason for 0 ("" otherwise).
int device_count(std::string* why = nullptr);

// A backend over device `ordinal`: device memory from cudaMalloc, host
// mappings of files (the CPU backend's), cudaHostRegister for wiring them.
// InvalidArgument when there is no such device.
std::unique_ptr<detail::Backend> make_backend(int ordinal);

// Copies host bytes into device memory. Device::buffer_from uses it (through
// dynamic_cast) until Backend itself can copy into its memory.
class HostCopier {
 public:
  virtual void copy_from_host(void* device_destination, const void* host_source, std::size_t bytes) = 0;

 protected:
  ~HostCopier() = default;
};

}  // namespace nuvec::cuda
