// Device::cuda() and create_cuda(): one device per GPU over the CUDA backend
// (src/cuda/cuda_backend.cc, or no_cuda.cc without the toolkit). Here, not in
// src/device.cc, so that the core knows no backend (docs/architecture.md).
#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "cuda/cuda_backend.h"
#include "nuvec/cuda.h"
#include "nuvec/device.h"
#include "nuvec/error.h"

namespace nuvec {

int cuda_device_count() { return cuda::device_count(); }

Device& Device::cuda(int ordinal) {
  // One device per GPU, never destroyed (as cpu()); PyTorch's allocator
  // reaches them on every allocation, so the lookup takes no lock.
  constexpr int kMaxDevices = 64;
  static std::array<std::atomic<Device*>, kMaxDevices> devices{};
  static std::mutex* const creating = new std::mutex;
  if (ordinal >= 0 && ordinal < kMaxDevices) {
    if (Device* device = devices[ordinal].load(std::memory_order_acquire)) return *device;
  }
  std::unique_ptr<detail::Backend> backend = cuda::make_backend(ordinal);  // InvalidArgument if no such GPU
  if (ordinal >= kMaxDevices) {
    throw InvalidArgument(fmt::format("CUDA device {}: nuvec serves at most {} GPUs", ordinal, kMaxDevices));
  }
  std::lock_guard lock(*creating);
  if (Device* device = devices[ordinal].load(std::memory_order_acquire)) return *device;
  auto* created = new Device(std::move(backend), /*read_environment=*/true);
  devices[ordinal].store(created, std::memory_order_release);
  if (!created->trace_path_.empty()) {
    static std::atomic<Device*>* const all = devices.data();
    // Written at exit, as cpu()'s; atexit takes no argument, so each device
    // registers a handler that writes every CUDA device's trace once.
    static std::once_flag registered;
    std::call_once(registered, [] {
      std::atexit([] {
        for (int i = 0; i < kMaxDevices; ++i) {
          if (Device* d = all[i].load(std::memory_order_acquire)) d->write_environment_trace();
        }
      });
    });
  }
  return *created;
}

std::unique_ptr<Device> Device::create_cuda(int ordinal) {
  return std::make_unique<Device>(cuda::make_backend(ordinal), /*read_environment=*/true);
}

}  // namespace nuvec
