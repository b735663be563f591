// Device: the public face of an Allocator over a Backend.
#include "nuvec/device.h"

#include <array>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "cpu/cpu_backend.h"
#include "io/file.h"
#include "cuda/cuda_backend.h"
#include "memory/allocator.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec {

namespace {

// The value of an environment variable as a size, or empty when unset.
std::optional<std::size_t> size_from_environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return parse_size(value, name);
}

// NUVEC_TRACE_EVENTS: a whole number of events in [1, kMaxTraceEvents],
// checked whenever it is set (with NUVEC_TRACE or not), or empty when unset.
std::optional<std::size_t> trace_events_from_environment() {
  const char* value = std::getenv("NUVEC_TRACE_EVENTS");
  if (value == nullptr) return std::nullopt;
  const std::string_view text(value);
  std::size_t events = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), events);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || events == 0 ||
      events > kMaxTraceEvents) {
    throw InvalidArgument(fmt::format(
        "NUVEC_TRACE_EVENTS={}: the trace ring's size must be a whole number of events from 1 to {} "
        "(the default is {}; the ring grows as events come, about 200 bytes each)",
        text, kMaxTraceEvents, Device::kDefaultTraceEvents));
  }
  return events;
}

}  // namespace

Device::Device(std::unique_ptr<detail::Backend> backend, bool read_environment)
    : backend_(std::move(backend)), allocator_(std::make_unique<detail::Allocator>(*backend_)) {
  if (!read_environment) return;
  const auto memory_limit = size_from_environment("NUVEC_MEMORY_LIMIT");
  const auto cache_limit = size_from_environment("NUVEC_CACHE_LIMIT");
  const auto wired_limit = size_from_environment("NUVEC_WIRED_LIMIT");
  if (memory_limit) {
    allocator_->set_memory_limit(*memory_limit);
    allocator_->set_cache_limit(*memory_limit);  // the cache limit's default follows the memory limit
  }
  if (cache_limit) allocator_->set_cache_limit(*cache_limit);
  if (wired_limit) {
    try {
      allocator_->set_wired_limit(*wired_limit);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(fmt::format("NUVEC_WIRED_LIMIT={}: {}", std::getenv("NUVEC_WIRED_LIMIT"), e.what()));
    }
  }
  const auto events = trace_events_from_environment();
  if (const char* path = std::getenv("NUVEC_TRACE"); path != nullptr && *path != '\0') {
    // Each device that reads the environment writes its own file: the
    // first NUVEC_TRACE itself, later ones NUVEC_TRACE.2, .3, ...
    static std::atomic<int> devices{0};
    const int n = ++devices;
    const std::filesystem::path trace_path =
        n == 1 ? std::filesystem::path(path) : std::filesystem::path(fmt::format("{}.{}", path, n));
    // The trace is written when the device goes (at exit): a path that cannot
    // be written fails now, not then, when the program would exit 0.
    try {
      io::check_writable_regular_file(trace_path);
    } catch (const IoError& e) {
      throw IoError(fmt::format("NUVEC_TRACE: {} (the device's trace is written there at exit)", e.what()),
                    e.path(), e.error_code());
    }
    trace_path_ = trace_path;
    start_trace(events.value_or(kDefaultTraceEvents));
  }
}

Device::~Device() { write_environment_trace(); }

void Device::write_environment_trace() noexcept {
  if (trace_path_.empty()) return;
  try {
    if (const std::optional<Trace> trace = allocator_->trace()) write_trace(trace_path_, *trace);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nuvec: cannot write the trace to %s: %s\n", trace_path_.c_str(), e.what());
  }
}

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
  return std::make_unique<Device>(cpu::make_backend(cpu::SystemCalls::real(), cpu::device_options()),
                                  /*read_environment=*/true);
}

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

std::string_view Device::name() const { return backend_->name(); }

Buffer Device::new_buffer(std::size_t len, std::uintptr_t stream) {
  if (len == 0) return Buffer();
  detail::Block& block = allocator_->allocate(len, stream);
  return Buffer(this, &block, static_cast<std::byte*>(block.address), len);
}

Buffer Device::buffer_from(std::span<const std::byte> bytes) {
  Buffer buffer = new_buffer(bytes.size());
  if (bytes.empty()) return buffer;
  if (detail::HostCopy* copy = backend_->host_copy()) {
    copy->copy_from_host(buffer.data(), bytes.data(), bytes.size());  // a GPU's memory is not the host's
  } else {
    std::memcpy(buffer.data(), bytes.data(), bytes.size());
  }
  return buffer;
}

MappedFile Device::map_file(const std::filesystem::path& path) {
  return MappedFile(allocator_->map(backend_->files().open(path), {}, /*whole_file=*/true));
}

MappedFile Device::map_ranges(const std::filesystem::path& path, std::span<const FileRange> ranges) {
  return MappedFile(allocator_->map(backend_->files().open(path), ranges, /*whole_file=*/false));
}

MappedFile Device::map_file(int fd, const std::filesystem::path& path) {
  return MappedFile(allocator_->map(backend_->files().open_descriptor(fd, path), {}, /*whole_file=*/true));
}

MappedFile Device::map_ranges(int fd, const std::filesystem::path& path, std::span<const FileRange> ranges) {
  return MappedFile(allocator_->map(backend_->files().open_descriptor(fd, path), ranges, /*whole_file=*/false));
}

MemoryStats Device::memory() const { return allocator_->memory(); }
DeviceCounters Device::counters() const { return allocator_->counters(); }
bool Device::host_addressable() const { return backend_->host_copy() == nullptr; }
void Device::reset_peak() { allocator_->reset_peak(); }
std::size_t Device::set_memory_limit(std::size_t bytes) { return allocator_->set_memory_limit(bytes); }
std::size_t Device::set_cache_limit(std::size_t bytes) { return allocator_->set_cache_limit(bytes); }
std::size_t Device::set_wired_limit(std::size_t bytes) { return allocator_->set_wired_limit(bytes); }
void Device::clear_cache() { allocator_->clear_cache(); }
bool Device::hold_staging(std::uint64_t id, std::size_t bytes) { return allocator_->wire_staging(id, bytes, true); }
void Device::release_staging(std::uint64_t id, std::size_t bytes) { allocator_->wire_staging(id, bytes, false); }

void Device::start_trace(std::size_t capacity) {
  if (capacity == 0 || capacity > kMaxTraceEvents) {
    throw InvalidArgument(fmt::format("start_trace({}): the ring holds from 1 to {} events", capacity,
                                      kMaxTraceEvents));
  }
  allocator_->start_trace(capacity, std::string(name()));
}
void Device::stop_trace() { allocator_->stop_trace(); }
std::optional<Trace> Device::trace() const { return allocator_->trace(); }
void Device::mark(std::string_view phase) { allocator_->mark(phase); }

void Device::release(detail::Block* block) noexcept { allocator_->free(*block); }
std::size_t Device::block_size(const detail::Block* block) { return block->size; }

void Buffer::reset() noexcept {
  if (block_ == nullptr) return;
  device_->release(block_);
  device_ = nullptr;
  block_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

std::size_t Buffer::capacity() const { return block_ == nullptr ? 0 : Device::block_size(block_); }

}  // namespace nuvec
