#include "cuda/driver_api.h"

#include <cuda_runtime_api.h>

#include <fmt/format.h>

namespace nuvec::cuda {

namespace {

// The ABI asked for: CUDA 12.0's versions of these functions (all of them
// date from 10.2 or earlier). The static runtime nuvec links already needs a
// driver newer than that.
constexpr unsigned kAbiVersion = 12000;

struct Loaded {
  DriverApi api;
  std::string missing;  // empty when every entry point was found
};

template <class F>
void fetch(const char* symbol, F& function, std::string& missing) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  const cudaError_t error = cudaGetDriverEntryPointByVersion(symbol, &address, kAbiVersion, cudaEnableDefault, &status);
#else  // toolkits before 12.5: the newest ABI of the runtime's own version, which is at least 12.0's
  const cudaError_t error = cudaGetDriverEntryPoint(symbol, &address, cudaEnableDefault, &status);
#endif
  if (error != cudaSuccess || status != cudaDriverEntryPointSuccess || address == nullptr) {
    (void)cudaGetLastError();
    if (missing.empty()) {
      int driver = 0;
      if (cudaDriverGetVersion(&driver) != cudaSuccess) (void)cudaGetLastError();
      missing = fmt::format("the NVIDIA driver (CUDA {}.{}) has no {} of CUDA {}.{} ({})", driver / 1000,
                            driver % 1000 / 10, symbol, kAbiVersion / 1000, kAbiVersion % 1000 / 10,
                            error != cudaSuccess ? cudaGetErrorString(error)
                            : status == cudaDriverEntryPointVersionNotSufficent ? "version not sufficient"
                                                                               : "symbol not found");
    }
    return;
  }
  function = reinterpret_cast<F>(address);
}

Loaded load() {
  Loaded l;
  fetch("cuGetErrorName", l.api.get_error_name, l.missing);
  fetch("cuDeviceGet", l.api.device_get, l.missing);
  fetch("cuDeviceGetAttribute", l.api.device_get_attribute, l.missing);
  fetch("cuMemGetAllocationGranularity", l.api.mem_get_allocation_granularity, l.missing);
  fetch("cuMemAddressReserve", l.api.mem_address_reserve, l.missing);
  fetch("cuMemAddressFree", l.api.mem_address_free, l.missing);
  fetch("cuMemCreate", l.api.mem_create, l.missing);
  fetch("cuMemRelease", l.api.mem_release, l.missing);
  fetch("cuMemMap", l.api.mem_map, l.missing);
  fetch("cuMemUnmap", l.api.mem_unmap, l.missing);
  fetch("cuMemSetAccess", l.api.mem_set_access, l.missing);
  return l;
}

}  // namespace

const DriverApi* driver_api(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.missing.empty()) {
    if (why != nullptr) *why = loaded.missing;
    return nullptr;
  }
  return &loaded.api;
}

std::string driver_error(std::string_view call, CUresult result) {
  const char* name = nullptr;
  const DriverApi* api = driver_api();
  if (api == nullptr || api->get_error_name(result, &name) != CUDA_SUCCESS || name == nullptr) {
    return fmt::format("{}: CUresult {}", call, static_cast<int>(result));
  }
  return fmt::format("{}: {}", call, name);
}

}  // namespace nuvec::cuda
