// DeviceAccess: the library's own view of a Device's allocator, for figures
// that are not part of the MemoryStats contract (the misses `nuvec replay`
// reports beside system allocations).
#pragma once

#include "memory/allocator.h"
#include "nuvec/device.h"

namespace nuvec::detail {

struct DeviceAccess {
  static const Allocator& allocator(const Device& device) { return *device.allocator_; }
  static Allocator& allocator(Device& device) { return *device.allocator_; }
};

}  // namespace nuvec::detail
