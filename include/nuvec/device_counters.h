// DeviceCounters: what a device holds from the system beside the MemoryStats
// contract — the address space it reserved and the memory it committed —
// for comparing with PyTorch's max_memory_reserved and with the driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace nuvec {

struct DeviceCounters {
  // The same count as MemoryStats::system_allocations: cache misses.
  std::uint64_t system_allocations = 0;
  // Address-space reservations the device holds now (the arena's), and
  // their bytes; 0 for a device of whole blocks.
  std::size_t reservations = 0;
  std::size_t reserved_bytes = 0;
  // Memory the device's backend holds physically now, and its highest since
  // the device was made or reset_peak(): on a GPU the arena's granules (at
  // least active + cache) or the cudaMalloc'd blocks. Empty on the CPU,
  // whose kernel commits pages on first touch and counts them (VmRSS).
  std::optional<std::size_t> committed;
  std::optional<std::size_t> committed_peak;
  // The highest active + cache since the device was made or reset_peak():
  // what it held for buffers at its fullest (PyTorch's max_memory_reserved).
  std::size_t peak_held = 0;

  friend bool operator==(const DeviceCounters&, const DeviceCounters&) = default;
};

}  // namespace nuvec
