// libnuvec_torch_alloc.so: PyTorch's CUDA memory through nuvec.
//
// torch.cuda.memory.CUDAPluggableAllocator calls nuvec_malloc and nuvec_free
// (python/nuvec_torch.py installs them); the other functions, for ctypes,
// read the statistics and set the limits of the process-wide devices
// Device::cuda(ordinal). Functions other than nuvec_malloc never throw: they
// return -1 and leave the message for nuvec_last_error().
#include <sys/types.h>

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/memory_stats.h"

#define NUVEC_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kMaxDevices = 64;

// The buffers PyTorch holds on one device, by address: nuvec_free is given
// only the pointer.
struct LiveBuffers {
  std::mutex mutex;
  std::unordered_map<void*, nuvec::Buffer> buffers;
};

// Never destroyed: PyTorch may free tensors while the process exits.
LiveBuffers& live(int device) {
  static auto* const all = new std::array<LiveBuffers, kMaxDevices>;
  return (*all)[static_cast<std::size_t>(device)];
}

nuvec::Device& device_at(int device) {
  if (device < 0 || device >= kMaxDevices) {
    throw nuvec::InvalidArgument(fmt::format("nuvec_torch_alloc: device {} is out of range", device));
  }
  return nuvec::Device::cuda(device);
}

thread_local std::string last_error;

// Runs `f`, turning an exception into -1 and nuvec_last_error().
template <class F>
int guarded(F&& f) noexcept {
  try {
    f();
    last_error.clear();
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return -1;
}

}  // namespace

// PyTorch's allocation: a buffer of `size` bytes on `device`. Past the memory
// limit (or when the device itself is full, after the cache was released)
// this raises nuvec::OutOfMemory, a std::bad_alloc, through PyTorch, which
// reports it to Python as a RuntimeError carrying nuvec's message. The
// buffer is for work on `stream` (PyTorch's current stream): a cached block
// last used on another stream is handed over after an event wait.
NUVEC_EXPORT void* nuvec_malloc(ssize_t size, int device, cudaStream_t stream) {
  if (size <= 0) return nullptr;
  nuvec::Buffer buffer =
      device_at(device).new_buffer(static_cast<std::size_t>(size), reinterpret_cast<std::uintptr_t>(stream));
  void* address = buffer.data();
  LiveBuffers& held = live(device);
  std::lock_guard lock(held.mutex);
  held.buffers.emplace(address, std::move(buffer));
  return address;
}

// PyTorch frees on the stream it allocated on; the block remembers it.
NUVEC_EXPORT void nuvec_free(void* ptr, ssize_t /*size*/, int device, cudaStream_t /*stream*/) {
  if (ptr == nullptr || device < 0 || device >= kMaxDevices) return;
  nuvec::Buffer buffer;  // destroyed after the lock is dropped: the allocator has its own
  {
    LiveBuffers& held = live(device);
    std::lock_guard lock(held.mutex);
    const auto it = held.buffers.find(ptr);
    if (it == held.buffers.end()) {
      std::fprintf(stderr, "nuvec_torch_alloc: nuvec_free(%p) on device %d: not a pointer nuvec_malloc gave\n", ptr,
                   device);
      return;
    }
    buffer = std::move(it->second);
    held.buffers.erase(it);
  }
}

NUVEC_EXPORT const char* nuvec_last_error(void) { return last_error.c_str(); }

NUVEC_EXPORT int nuvec_device_count(void) { return nuvec::cuda_device_count(); }

// The device's MemoryStats as JSON (the field names of MemoryStats) into
// `out`: returns the length without the terminating NUL, which is written
// only when it fits in `capacity`; -1 on error.
NUVEC_EXPORT long nuvec_stats_json(int device, char* out, std::size_t capacity) {
  std::string json;
  if (guarded([&] { json = nuvec::to_json(device_at(device).memory()); }) != 0) return -1;
  if (out != nullptr && capacity > json.size()) std::memcpy(out, json.c_str(), json.size() + 1);
  return static_cast<long>(json.size());
}

// The setters return 0 and store the previous value in `*previous` (when not
// null), or -1.
NUVEC_EXPORT int nuvec_set_memory_limit(int device, std::uint64_t bytes, std::uint64_t* previous) {
  return guarded([&] {
    const std::size_t was = device_at(device).set_memory_limit(bytes);
    if (previous != nullptr) *previous = was;
  });
}

NUVEC_EXPORT int nuvec_set_cache_limit(int device, std::uint64_t bytes, std::uint64_t* previous) {
  return guarded([&] {
    const std::size_t was = device_at(device).set_cache_limit(bytes);
    if (previous != nullptr) *previous = was;
  });
}

NUVEC_EXPORT int nuvec_set_wired_limit(int device, std::uint64_t bytes, std::uint64_t* previous) {
  return guarded([&] {
    const std::size_t was = device_at(device).set_wired_limit(bytes);
    if (previous != nullptr) *previous = was;
  });
}

NUVEC_EXPORT int nuvec_reset_peak(int device) {
  return guarded([&] { device_at(device).reset_peak(); });
}

NUVEC_EXPORT int nuvec_clear_cache(int device) {
  return guarded([&] { device_at(device).clear_cache(); });
}
