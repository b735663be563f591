// DeviceAccess: the library's own view of a Device's allocator and backend,
// for figures that are not part of the MemoryStats contract (the misses
// `nuvec replay` reports beside system allocations) and for what the loaders
// must know of the memory (whether the host can write a buffer directly).
#pragma once

#include "memory/allocator.h"
#include "nuvec/device.h"

namespace nuvec::detail {

struct DeviceAccess {
  static const Allocator& allocator(const Device& device) { return *device.allocator_; }
  static Allocator& allocator(Device& device) { return *device.allocator_; }
  static const Backend& backend(const Device& device) { return *device.backend_; }
};

}  // namespace nuvec::detail
