#include "nvml_memory.h"

#include <dlfcn.h>
#include <unistd.h>

#include <vector>

#include <fmt/format.h>

namespace nuvec::tool {
namespace {

// NVML's C API, declared here from its documentation (nvml.h is not part of
// the toolkit this builds with): return codes are ints, 0 success, 7
// NVML_ERROR_INSUFFICIENT_SIZE.
using nvmlDevice_t = void*;
constexpr int kSuccess = 0;
constexpr int kInsufficientSize = 7;
constexpr unsigned long long kValueNotAvailable = ~0ull;

// nvmlProcessInfo_t, as _v2 and _v3 of GetComputeRunningProcesses fill it.
struct ProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct Nvml {
  int (*init)() = nullptr;
  int (*count)(unsigned int*) = nullptr;
  int (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  int (*processes)(nvmlDevice_t, unsigned int*, ProcessInfo*) = nullptr;
  std::string error;  // why it cannot be used; empty when it can
};

const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml n;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      n.error = "libnvidia-ml.so.1 (the NVIDIA driver's NVML) cannot be loaded";
      return n;
    }
    n.init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    n.count = reinterpret_cast<int (*)(unsigned int*)>(dlsym(lib, "nvmlDeviceGetCount_v2"));
    n.handle = reinterpret_cast<int (*)(unsigned int, nvmlDevice_t*)>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    void* p = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (p == nullptr) p = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
    n.processes = reinterpret_cast<int (*)(nvmlDevice_t, unsigned int*, ProcessInfo*)>(p);
    if (n.init == nullptr || n.count == nullptr || n.handle == nullptr || n.processes == nullptr) {
      n.error = "libnvidia-ml.so.1 lacks nvmlDeviceGetComputeRunningProcesses_v2/_v3 (a driver older than CUDA 11)";
    } else if (const int rc = n.init(); rc != kSuccess) {
      n.error = fmt::format("nvmlInit_v2 failed (NVML error {})", rc);
    }
    return n;  // the library stays loaded for the process's life
  }();
  return loaded;
}

}  // namespace

NvmlReading nvml_process_memory() {
  const Nvml& n = nvml();
  if (!n.error.empty()) return {std::nullopt, n.error};
  unsigned int gpus = 0;
  if (const int rc = n.count(&gpus); rc != kSuccess) {
    return {std::nullopt, fmt::format("nvmlDeviceGetCount_v2 failed (NVML error {})", rc)};
  }
  const auto pid = static_cast<unsigned int>(getpid());
  std::uint64_t total = 0;
  bool listed = false;
  for (unsigned int g = 0; g < gpus; ++g) {
    nvmlDevice_t device = nullptr;
    if (n.handle(g, &device) != kSuccess) continue;
    std::vector<ProcessInfo> infos(64);
    unsigned int count = static_cast<unsigned int>(infos.size());
    int rc = n.processes(device, &count, infos.data());
    if (rc == kInsufficientSize) {  // more processes than room: count says how many now
      infos.resize(count + 16);
      count = static_cast<unsigned int>(infos.size());
      rc = n.processes(device, &count, infos.data());
    }
    if (rc != kSuccess) continue;
    for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
      if (infos[i].pid != pid || infos[i].usedGpuMemory == kValueNotAvailable) continue;
      total += infos[i].usedGpuMemory;
      listed = true;
    }
  }
  if (!listed) {
    return {std::nullopt, fmt::format("NVML lists no GPU memory for pid {} (another PID namespace, as in a "
                                      "container, or a driver that hides it)",
                                      pid)};
  }
  return {total, {}};
}

}  // namespace nuvec::tool
