// The GPU memory NVML (the driver's management library) says this process
// holds: the operating system's side of the cross-check on a GPU, as VmHWM
// is on the CPU. libnvidia-ml.so.1 is loaded at run time (dlopen), so the
// command has no link-time dependency on it and runs where it is missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace nuvec::tool {

struct NvmlReading {
  // Bytes NVML lists for this process's pid, summed over every GPU (its
  // usedGpuMemory: the CUDA context, every cudaMalloc and VMM mapping,
  // libraries' own allocations). Empty when NVML could not say.
  std::optional<std::uint64_t> process_bytes;
  std::string why;  // when empty: NVML missing, failing, or our pid not listed
};

// Now (NVML keeps no peak). Cheap after the first call (NVML stays loaded).
NvmlReading nvml_process_memory();

}  // namespace nuvec::tool
