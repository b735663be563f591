// The CUDA backend's face to the rest of nuvec, in plain C++ (no CUDA
// headers), so that device.cc and the tests build the same with or without
// the toolkit: without it (no_cuda.cc) there are no devices.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "memory/backend.h"
#include "nuvec/device.h"

namespace nuvec::cuda {

// How many CUDA devices this process can use: 0 without a GPU, without a
// driver, or when nuvec was built without CUDA. `why`, when given, gets the
// reason for 0 ("" otherwise).
int device_count(std::string* why = nullptr);

struct CudaBackendOptions {
  // Blocks are carved from reserved device address space, physical memory
  // mapped in 2 MiB granules as blocks need it (the arena; the driver's
  // virtual memory management API). false: each block is its own cudaMalloc,
  // reused whole (the policy of backends that cannot reserve).
  bool reservations = true;
  // The address space a reservation takes; 0: the device's memory. A larger
  // request gets one of its own size. Address space costs no device memory.
  std::size_t reservation_bytes = 0;
  // The largest physical allocation one commit maps (rounded up to 2 MiB
  // granules; 0: VmmReservations::kDefaultChunkBytes, 32 MiB). Larger
  // commits cost the driver less; memory goes back to the device a whole
  // chunk at a time (src/cuda/vmm_reservations.h).
  std::size_t commit_chunk_bytes = 0;
};

// A backend over device `ordinal`: device memory (see CudaBackendOptions),
// host mappings of files (the CPU backend's), cudaHostRegister for wiring
// them. InvalidArgument when there is no such device, or when reservations
// are asked for and the driver or device cannot make them (the message says
// why and how to get whole blocks instead).
std::unique_ptr<detail::Backend> make_backend(int ordinal, const CudaBackendOptions& options);
// The same with the options of the environment: NUVEC_CUDA_ARENA=0 chooses
// whole blocks, 1 (or unset) the arena; any other value is InvalidArgument.
// Device::cuda and Device::create_cuda use this.
std::unique_ptr<detail::Backend> make_backend(int ordinal);


}  // namespace nuvec::cuda
