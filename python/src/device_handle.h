// How Python holds a Device: by shared_ptr, so that every object viewing its
// memory can keep it alive. The process-wide devices never die; their handles
// own nothing.
#pragma once

#include <memory>

#include "nuvec/device.h"

namespace nuvec::python {

using DeviceHandle = std::shared_ptr<Device>;

inline DeviceHandle process_wide(Device& device) { return DeviceHandle(&device, [](Device*) {}); }

}  // namespace nuvec::python
