// Device: the public face of an Allocator over a Backend.
#include "nuvec/device.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>  // environ

#include "memory/input_file.h"
#include "memory/allocator.h"
#include "memory/trace_recorder.h"
#include "memory/trace_signals.h"
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

constexpr std::array<std::string_view, 3> kLimitVariables = {"NUVEC_MEMORY_LIMIT", "NUVEC_CACHE_LIMIT",
                                                            "NUVEC_WIRED_LIMIT"};

// A device's part of a per-device variable's name: "CPU", "CUDA0", "CUDA1", ...
std::string variable_suffix(std::string_view device_name) {
  std::string suffix;
  for (const char c : device_name) {
    if (c >= 'a' && c <= 'z') suffix += static_cast<char>(c - 'a' + 'A');
    if (c >= '0' && c <= '9') suffix += c;
  }
  return suffix;
}

// A limit variable's per-device forms (NUVEC_MEMORY_LIMIT_CUDA1=...) must
// name a device that could exist: a typo (NUVEC_MEMORY_LIMIT_GPU1) would
// otherwise leave a GPU without the limit its user meant, silently.
void check_per_device_names() {
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    const std::string_view name = variable.substr(0, variable.find('='));
    for (const std::string_view base : kLimitVariables) {
      if (name.size() < base.size() + 1 || !name.starts_with(base) || name[base.size()] != '_') continue;
      const std::string_view device = name.substr(base.size() + 1);
      const bool cuda = device.size() > 4 && device.starts_with("CUDA") &&
                        device.substr(4).find_first_not_of("0123456789") == std::string_view::npos;
      if (device != "CPU" && !cuda) {
        throw InvalidArgument(fmt::format("{}: not a variable nuvec reads; the per-device forms are {}_CPU and "
                                          "{}_CUDA<ordinal> (e.g. {}_CUDA1), beside {} for every device",
                                          name, base, base, base, base));
      }
    }
  }
}

// The variable a device reads for `base`: its per-device form
// (NUVEC_MEMORY_LIMIT_CUDA1 for cuda:1) where that is set, else `base`.
std::string limit_variable(std::string_view base, std::string_view device_name) {
  std::string specific = fmt::format("{}_{}", base, variable_suffix(device_name));
  return std::getenv(specific.c_str()) != nullptr ? specific : std::string(base);
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
  check_per_device_names();
  const std::string memory_variable = limit_variable(kLimitVariables[0], backend_->name());
  const std::string cache_variable = limit_variable(kLimitVariables[1], backend_->name());
  const std::string wired_variable = limit_variable(kLimitVariables[2], backend_->name());
  const auto memory_limit = size_from_environment(memory_variable.c_str());
  const auto cache_limit = size_from_environment(cache_variable.c_str());
  const auto wired_limit = size_from_environment(wired_variable.c_str());
  if (memory_limit) {
    allocator_->set_memory_limit(*memory_limit);
    allocator_->set_cache_limit(*memory_limit);  // the cache limit's default follows the memory limit
  }
  if (cache_limit) allocator_->set_cache_limit(*cache_limit);
  if (wired_limit) {
    try {
      allocator_->set_wired_limit(*wired_limit);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(fmt::format("{}={}: {}", wired_variable, std::getenv(wired_variable.c_str()), e.what()));
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
    detail::write_trace_on_signal(*this, [](Device& d) noexcept { d.write_environment_trace(); });
  }
}

Device::~Device() {
  if (trace_path_.empty()) return;
  detail::forget_trace_on_signal(*this);
  write_environment_trace();
}

void Device::write_environment_trace_at_refusal() noexcept {
  if (trace_path_.empty()) return;
  try {
    std::optional<Trace> trace = allocator_->trace();
    if (!trace) return;
    // The trace up to this thread's refusal: events other threads added since stay for the next write.
    const std::uint32_t me = detail::trace_thread_id();
    const auto refusal = std::find_if(trace->events.rbegin(), trace->events.rend(), [&](const TraceEvent& e) {
      return e.kind == TraceEventKind::refuse && e.thread == me;
    });
    if (refusal != trace->events.rend()) trace->events.erase(refusal.base(), trace->events.end());
    write_trace(trace_path_, *trace);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nuvec: cannot write the trace to %s: %s\n", trace_path_.c_str(), e.what());
  }
}

void Device::write_environment_trace() noexcept {
  if (trace_path_.empty()) return;
  try {
    if (const std::optional<Trace> trace = allocator_->trace()) write_trace(trace_path_, *trace);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nuvec: cannot write the trace to %s: %s\n", trace_path_.c_str(), e.what());
  }
}

std::string_view Device::name() const { return backend_->name(); }

Buffer Device::new_buffer(std::size_t len, std::uintptr_t stream) {
  if (len == 0) return Buffer();
  try {
    detail::Block& block = allocator_->allocate(len, stream);
    return Buffer(this, &block, static_cast<std::byte*>(block.address), len);
  } catch (const OutOfMemory&) {
    write_environment_trace_at_refusal();
    throw;
  }
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
  try {
    return MappedFile(allocator_->map(backend_->files().open(path), {}, /*whole_file=*/true));
  } catch (const OutOfMemory&) {
    write_environment_trace_at_refusal();
    throw;
  }
}

MappedFile Device::map_ranges(const std::filesystem::path& path, std::span<const FileRange> ranges) {
  try {
    return MappedFile(allocator_->map(backend_->files().open(path), ranges, /*whole_file=*/false));
  } catch (const OutOfMemory&) {
    write_environment_trace_at_refusal();
    throw;
  }
}

MappedFile Device::map_file(int fd, const std::filesystem::path& path) {
  try {
    return MappedFile(allocator_->map(backend_->files().open_descriptor(fd, path), {}, /*whole_file=*/true));
  } catch (const OutOfMemory&) {
    write_environment_trace_at_refusal();
    throw;
  }
}

MappedFile Device::map_ranges(int fd, const std::filesystem::path& path, std::span<const FileRange> ranges) {
  try {
    return MappedFile(allocator_->map(backend_->files().open_descriptor(fd, path), ranges, /*whole_file=*/false));
  } catch (const OutOfMemory&) {
    write_environment_trace_at_refusal();
    throw;
  }
}

MemoryStats Device::memory() const { return allocator_->memory(); }
DeviceCounters Device::counters() const { return allocator_->counters(); }
bool Device::host_addressable() const { return backend_->host_copy() == nullptr; }
std::optional<int> Device::gpu_ordinal() const { return backend_->gpu_ordinal(); }

Buffer Device::read_file(int fd, std::size_t length, std::span<const FileRead> reads) {
  for (const FileRead& r : reads) {
    if (r.buffer_offset > length || r.length > length - r.buffer_offset) {
      throw InvalidArgument(fmt::format("Device::read_file: bytes [{}, {}) are outside the buffer of {} bytes",
                                        r.buffer_offset, r.buffer_offset + r.length, length));
    }
  }
  // A range past the end is refused before anything is allocated.
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    throw IoError(fmt::format("Device::read_file: cannot stat file descriptor {}: {}", fd, std::strerror(error)), {},
                  error);
  }
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  for (const FileRead& r : reads) {
    if (r.file_offset > file_size || r.length > file_size - r.file_offset) {
      throw IoError(fmt::format("Device::read_file: bytes [{}, {}) of file descriptor {} lie past its end ({} bytes)",
                                r.file_offset, r.file_offset + r.length, fd, file_size),
                    {}, EINVAL);
    }
  }
  if (detail::FileReader* reader = backend_->file_reader()) return reader->read(*this, fd, length, reads);
  Buffer buffer = new_buffer(length);
  for (const FileRead& r : reads) {
    const std::int64_t done = io::read_fully(fd, r.file_offset, buffer.bytes().subspan(r.buffer_offset, r.length));
    if (done < 0 || static_cast<std::size_t>(done) < r.length) {
      const int error = done < 0 ? static_cast<int>(-done) : EIO;
      throw IoError(fmt::format("Device::read_file: cannot read {} bytes at byte {} of file descriptor {}: {}", r.length,
                                r.file_offset, fd, done < 0 ? std::strerror(error) : "the file ends early"),
                    {}, error);
    }
  }
  return buffer;
}
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
  allocator_->start_trace(capacity, std::string(name()), this);
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
