// The driver's virtual memory management API (cuMemAddressReserve,
// cuMemCreate, cuMemMap, cuMemSetAccess, ...), which the CUDA arena is built
// on. nuvec does not link libcuda: its binaries must start, and their GPU
// tests skip, on machines with the toolkit but no driver (CI). The entry
// points are fetched from the driver the runtime has loaded, through
// cudaGetDriverEntryPointByVersion, once.
#pragma once

#include <cuda.h>  // the driver's types only: nothing here links against libcuda

#include <string>
#include <string_view>

namespace nuvec::cuda {

struct DriverApi {
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*mem_get_allocation_granularity)(size_t*, const CUmemAllocationProp*,
                                             CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*mem_address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*mem_address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                         unsigned long long) = nullptr;
  CUresult (*mem_release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*mem_unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
};

// The entry points, or nullptr when the driver lacks one of them (`why`, when
// given, then says which and what the driver supports). Call after the
// runtime is initialised (any runtime call that succeeded on a device).
const DriverApi* driver_api(std::string* why = nullptr);

// "cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY".
std::string driver_error(std::string_view call, CUresult result);

}  // namespace nuvec::cuda
