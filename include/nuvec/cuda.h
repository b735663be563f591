// NVIDIA GPUs: what a CUDA device's buffers count, what the device is, and
// copies between its buffers and host memory. The devices themselves are
// Device::cuda(ordinal) and Device::create_cuda(ordinal) (nuvec/device.h);
// checkpoint uploads are nuvec/cuda_upload.h. docs/cuda.md has the details.
//
// Every function here exists whether or not nuvec was built with CUDA;
// without it (or without a GPU) cuda_device_count() is 0 and the others raise
// InvalidArgument, except allocation_size, which is arithmetic.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "nuvec/buffer.h"

namespace nuvec::cuda {

// Size classes of a CUDA device: 512-byte steps up to 2 MiB, whole 2 MiB
// steps beyond (docs/cuda.md says why). kLargeStep is also the arena's
// commit granule: physical memory is mapped 2 MiB at a time, and the backend
// checks that the driver's allocation granularity divides it.
inline constexpr std::size_t kSmallStep = 512;
inline constexpr std::size_t kLargeStep = std::size_t{2} << 20;

// The wired limit a CUDA device starts with (the CPU's is 0): room for an
// upload's page-locked staging, which counts in `wired` (nuvec/cuda_upload.h;
// docs/cuda.md, "The wired limit on a GPU"). Mappings that fit under it are wired too.
inline constexpr std::size_t kDefaultWiredLimit = std::size_t{256} << 20;

// What a CUDA buffer of `len` bytes counts in `active`: 0 for 0; empty on
// overflow. Exact, as allocation_size is for the CPU.
std::optional<std::size_t> allocation_size(std::size_t len);

struct DeviceInfo {
  int ordinal = 0;
  std::string name;              // "NVIDIA H200"
  std::size_t total_memory = 0;  // bytes: the default memory limit of Device::cuda(ordinal)
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

// InvalidArgument when there is no such device.
DeviceInfo device_info(int ordinal);

// Copies `destination.size()` bytes from `source` at byte `offset` into host
// memory, and back; synchronous. `source`/`destination` may be a buffer of any
// device (CUDA or CPU). InvalidArgument if the range is outside the buffer;
// IoError if the copy fails.
void copy_to_host(std::span<std::byte> destination, const Buffer& source, std::size_t offset = 0);
void copy_from_host(Buffer& destination, std::span<const std::byte> source, std::size_t offset = 0);

}  // namespace nuvec::cuda
