// Device::cpu() and create_cpu(): the CPU device over the CPU backend. Here,
// not in src/device.cc, so that the core knows no backend (docs/architecture.md).
#include <cstdlib>
#include <memory>

#include "cpu/cpu_backend.h"
#include "nuvec/device.h"

namespace nuvec {

Device& Device::cpu() {
  // Never destroyed: buffers in other static objects may outlive main().
  // Its NUVEC_TRACE is written at exit instead.
  static Device* const device = [] {
    auto* created = new Device(cpu::make_backend(cpu::SystemCalls::real(), cpu::device_options()), /*read_environment=*/true);
    std::atexit([] { Device::cpu().write_environment_trace(); });
    return created;
  }();
  return *device;
}

std::unique_ptr<Device> Device::create_cpu() {
  return std::make_unique<Device>(cpu::make_backend(cpu::SystemCalls::real(), cpu::device_options()), /*read_environment=*/true);
}

}  // namespace nuvec
