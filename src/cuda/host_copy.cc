// Device facts and copies between buffers and host memory.
#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_error.h"
#include "nuvec/cuda.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::cuda {

namespace {

void check_range(const Buffer& buffer, std::size_t offset, std::size_t length, const char* what) {
  if (offset > buffer.size() || length > buffer.size() - offset) {
    throw InvalidArgument(fmt::format("{}: bytes [{}, {}) are outside the buffer of {} bytes", what, offset,
                                      offset + length, buffer.size()));
  }
}

}  // namespace

DeviceInfo device_info(int ordinal) {
  std::string why;
  const int count = device_count(&why);
  if (ordinal < 0 || ordinal >= count) {
    throw InvalidArgument(fmt::format("there is no CUDA device {}: this process sees {} ({})", ordinal, count,
                                      why.empty() ? "ordinals start at 0" : why));
  }
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, ordinal), "cudaGetDeviceProperties",
        fmt::format("read the properties of CUDA device {}", ordinal));
  return DeviceInfo{.ordinal = ordinal,
                    .name = properties.name,
                    .total_memory = properties.totalGlobalMem,
                    .compute_capability_major = properties.major,
                    .compute_capability_minor = properties.minor};
}

// cudaMemcpyDefault: unified addressing tells device from host memory, so a
// CPU device's buffer copies too.
void copy_to_host(std::span<std::byte> destination, const Buffer& source, std::size_t offset) {
  check_range(source, offset, destination.size(), "copy_to_host");
  if (destination.empty()) return;
  check(cudaMemcpy(destination.data(), source.data() + offset, destination.size(), cudaMemcpyDefault), "cudaMemcpy",
        fmt::format("copy {} from a buffer to the host", format_bytes(destination.size())));
}

void copy_from_host(Buffer& destination, std::span<const std::byte> source, std::size_t offset) {
  check_range(destination, offset, source.size(), "copy_from_host");
  if (source.empty()) return;
  check(cudaMemcpy(destination.data() + offset, source.data(), source.size(), cudaMemcpyDefault), "cudaMemcpy",
        fmt::format("copy {} from the host to a buffer", format_bytes(source.size())));
}

}  // namespace nuvec::cuda
