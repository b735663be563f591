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

}  // namespace nuvec::cuda
