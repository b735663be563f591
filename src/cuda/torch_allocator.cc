// PyTorch's CUDA memory through nuvec: compiled into the Python module
// (nuvec.torch.install() hands it to torch.cuda.memory.CUDAPluggableAllocator,
// which calls nuvec_malloc and nuvec_free) and into libnuvec_torch_alloc.so
// for other loaders. The other functions, plain C,
// read the statistics and set the limits of the process-wide devices
// Device::cuda(ordinal). Functions other than nuvec_malloc never throw: they
// return -1 and leave the message for nuvec_last_error().
#include <sys/types.h>

#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "cuda/cuda_backend.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/memory_stats.h"

#define NUVEC_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kMaxDevices = 64;

// The buffers PyTorch holds on one device, by address: nuvec_free is given
// only the pointer. And, when NUVEC_TORCH_CALL_TIMES=1, the calls and the
// time spent in them (steady clock), for profiling: how much of a model's
// time is the allocator's. Off by default, as the four clock reads would
// cost about as much as the allocation itself.
struct LiveBuffers {
  std::mutex mutex;
  std::unordered_map<void*, nuvec::Buffer> buffers;
  std::atomic<std::uint64_t> mallocs{0}, malloc_ns{0}, frees{0}, free_ns{0};
};

bool call_times_wanted() {
  static const bool wanted = [] {
    const char* value = std::getenv("NUVEC_TORCH_CALL_TIMES");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return wanted;
}

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

// 0 when call times are off.
std::uint64_t now_ns() {
  if (!call_times_wanted()) return 0;
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

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
  const std::uint64_t start = now_ns();
  nuvec::Device& gpu = device_at(device);
  nuvec::Buffer buffer = gpu.new_buffer(static_cast<std::size_t>(size), reinterpret_cast<std::uintptr_t>(stream));
  void* address = buffer.data();
  LiveBuffers& held = live(device);
  {
    std::lock_guard lock(held.mutex);
    held.buffers.emplace(address, std::move(buffer));
  }
  if (call_times_wanted()) {
    held.malloc_ns.fetch_add(now_ns() - start, std::memory_order_relaxed);
    held.mallocs.fetch_add(1, std::memory_order_relaxed);
  }
  return address;
}

// PyTorch frees on the stream it allocated on; the block remembers it.
NUVEC_EXPORT void nuvec_free(void* ptr, ssize_t /*size*/, int device, cudaStream_t /*stream*/) {
  if (ptr == nullptr || device < 0 || device >= kMaxDevices) return;
  const std::uint64_t start = now_ns();
  LiveBuffers& held = live(device);
  {
    nuvec::Buffer buffer;  // destroyed after the lock is dropped: the allocator has its own
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
  if (call_times_wanted()) {
    held.free_ns.fetch_add(now_ns() - start, std::memory_order_relaxed);
    held.frees.fetch_add(1, std::memory_order_relaxed);
  }
}

// Calls of nuvec_malloc and nuvec_free on `device` and the nanoseconds spent
// in them since the process started, into out[0..3]: mallocs, malloc_ns,
// frees, free_ns; all 0 unless NUVEC_TORCH_CALL_TIMES=1.
NUVEC_EXPORT int nuvec_call_times(int device, std::uint64_t* out) {
  return guarded([&] {
    device_at(device);  // validates the ordinal
    const LiveBuffers& held = live(device);
    out[0] = held.mallocs.load(std::memory_order_relaxed);
    out[1] = held.malloc_ns.load(std::memory_order_relaxed);
    out[2] = held.frees.load(std::memory_order_relaxed);
    out[3] = held.free_ns.load(std::memory_order_relaxed);
  });
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

// Also restarts the peak of active + cache (nuvec_peak_held) from now.
NUVEC_EXPORT int nuvec_reset_peak(int device) {
  return guarded([&] { device_at(device).reset_peak(); });
}

// The highest active + cache (what nuvec held for PyTorch's tensors, its
// "reserved") since the device was made or the last nuvec_reset_peak, into
// `*out`.
NUVEC_EXPORT int nuvec_peak_held(int device, std::uint64_t* out) {
  return guarded([&] {
    const std::size_t peak = device_at(device).counters().peak_held;
    if (out != nullptr) *out = peak;
  });
}

// The device memory nuvec holds from the GPU physically, and the most it
// held since the first allocation or the last nuvec_reset_peak, into
// out[0..1]: with the arena (the default) the 2 MiB granules mapped, which
// small blocks share, so at least active + cache; with whole blocks
// (NUVEC_CUDA_ARENA=0) the cudaMalloc'd bytes, active + cache.
NUVEC_EXPORT int nuvec_committed(int device, std::uint64_t* out) {
  return guarded([&] {
    const nuvec::DeviceCounters counters = device_at(device).counters();
    out[0] = counters.committed.value_or(0);
    out[1] = counters.committed_peak.value_or(0);
  });
}

// The address-space reservations the device holds now and their bytes,
// into out[0..1] (Device::counters; 0 with whole blocks).
NUVEC_EXPORT int nuvec_reservations(int device, std::uint64_t* out) {
  return guarded([&] {
    const nuvec::DeviceCounters counters = device_at(device).counters();
    out[0] = counters.reservations;
    out[1] = counters.reserved_bytes;
  });
}

NUVEC_EXPORT int nuvec_clear_cache(int device) {
  return guarded([&] { device_at(device).clear_cache(); });
}
