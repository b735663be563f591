// Device: one allocator's view of one source of memory (the CPU, later GPUs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "nuvec/buffer.h"
#include "nuvec/device_counters.h"
#include "nuvec/mapped_file.h"
#include "nuvec/memory_stats.h"
#include "nuvec/trace.h"

namespace nuvec {

namespace detail {
class Allocator;
class Backend;
}  // namespace detail

// One byte range of a file, and where in a new buffer it goes (Device::read_file).
struct FileRead {
  std::uint64_t file_offset = 0;
  std::size_t length = 0;
  std::size_t buffer_offset = 0;
};

// Every method may be called from any thread. Buffers and mappings must not
// outlive the device that made them (the process-wide devices never die).
class Device {
 public:
  // The process-wide CPU device, created on first use. Reads NUVEC_MEMORY_LIMIT,
  // NUVEC_CACHE_LIMIT and NUVEC_WIRED_LIMIT then (InvalidArgument if malformed).
  // Each has a per-device form that wins for its device where set:
  // NUVEC_MEMORY_LIMIT_CPU, NUVEC_MEMORY_LIMIT_CUDA0, NUVEC_MEMORY_LIMIT_CUDA1,
  // ... (another suffix is an InvalidArgument).
  static Device& cpu();

  // A new, independent CPU device with its own cache, limits and statistics
  // (for tests and for isolating a subsystem). Reads the environment as cpu().
  static std::unique_ptr<Device> create_cpu();

  // The process-wide device of CUDA GPU `ordinal` (0 .. cuda_device_count()-1),
  // created on first use and reading the environment as cpu() does. Its
  // buffers are device memory (docs/cuda.md): data() is a device pointer.
  // InvalidArgument, saying why, when there is no such GPU (none on this
  // machine, no driver, or nuvec built without CUDA).
  static Device& cuda(int ordinal = 0);
  // A new, independent device on GPU `ordinal`, as create_cpu() is for the CPU.
  static std::unique_ptr<Device> create_cuda(int ordinal = 0);

  // Builds a device over a backend; `read_environment` applies the NUVEC_*
  // overrides. Used by create_cpu() and by tests that inject system calls.
  Device(std::unique_ptr<detail::Backend> backend, bool read_environment);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  std::string_view name() const;

  // A buffer of `len` bytes, from the cache where a block fits, otherwise from
  // the system. Raises OutOfMemory past the memory limit (nothing changes).
  // `stream` (a cudaStream_t's bits; 0, the legacy default stream, on the
  // CPU) is where the buffer will be used: a cached block last used on
  // another stream is handed over only after that stream's work is ordered
  // before this one's.
  Buffer new_buffer(std::size_t len, std::uintptr_t stream = 0);
  // A new buffer holding a copy of `bytes`.
  Buffer buffer_from(std::span<const std::byte> bytes);

  // Maps the whole file read-only and shared, without copying; it counts
  // mapping_size(file length) in `mapped` until the last owner is gone.
  MappedFile map_file(const std::filesystem::path& path);
  // Maps only `ranges` of the file, each widened to whole pages (overlapping
  // or touching ranges are merged); only those pages count in `mapped`.
  MappedFile map_ranges(const std::filesystem::path& path, std::span<const FileRange> ranges);
  // The same, of a file the caller already has open read-only (the
  // descriptor is duplicated, not taken; `path` names it in messages). A
  // loader that parsed a header through `fd` maps exactly that file, so one
  // renamed over it in between cannot slip in.
  MappedFile map_file(int fd, const std::filesystem::path& path);
  MappedFile map_ranges(int fd, const std::filesystem::path& path, std::span<const FileRange> ranges);

  // A consistent snapshot of every statistic.
  MemoryStats memory() const;
  // What the device holds from the system beside the statistics: its
  // reservations, its committed memory, the peak of active + cache.
  DeviceCounters counters() const;
  // Whether the host reads and writes this device's buffers directly (the
  // CPU's; not a GPU's device memory, which takes copies).
  bool host_addressable() const;
  // The CUDA ordinal of this device's GPU; empty on the CPU.
  std::optional<int> gpu_ordinal() const;
  // A new buffer of `length` bytes holding `reads` of the open file `fd`
  // (read with pread; nothing is mapped). On the CPU, positioned reads into
  // the buffer; on a GPU, whose memory the host cannot write, the device's
  // own path: page-locked staging, then copies (cuda::read_file). OutOfMemory
  // (nothing changed) past a limit; InvalidArgument if a range falls outside
  // the buffer; IoError if the file cannot be read or ends early.
  Buffer read_file(int fd, std::size_t length, std::span<const FileRead> reads);
  // peak = active, peak_with_mapped = active + mapped.
  void reset_peak();
  // Each setter returns the previous value. The memory limit cannot be set
  // below active + mapped; the wired limit not above what the process may
  // lock (RLIMIT_MEMLOCK without CAP_IPC_LOCK, physical memory always).
  std::size_t set_memory_limit(std::size_t bytes);
  std::size_t set_cache_limit(std::size_t bytes);
  std::size_t set_wired_limit(std::size_t bytes);
  // Returns every cached block to the system.
  void clear_cache();

  // Page-locked host memory that is no buffer or mapping of this device but
  // serves its transfers (a GPU upload's staging) counts in `wired`, within
  // wired_limit. hold_staging takes `bytes` under `id`, or returns false and
  // changes nothing if they would pass the limit; release_staging gives
  // bytes held before back (mappings waiting for the room are wired then).
  // Traced as wire/unwire events of `id`.
  bool hold_staging(std::uint64_t id, std::size_t bytes);
  void release_staging(std::uint64_t id, std::size_t bytes);

  // The event trace (docs/trace-format.md), off by default: every
  // allocation, free, release, mapping, wiring, refusal, limit change and
  // mark from now on, each with the statistics after it, in a ring of
  // `capacity` events (the oldest are dropped first). Starting again
  // discards what was recorded. NUVEC_TRACE=path starts it when a device is
  // created and writes it when the device goes (the process-wide device: at
  // exit; a path that cannot be written is an IoError when the device is
  // created), at every OutOfMemory (the trace up to the refusal), and when
  // SIGINT or SIGTERM stops the program (where it has no handler of its own); NUVEC_TRACE_EVENTS sets the ring's size (whole events, 1 to
  // kMaxTraceEvents, checked whenever set). The ring's memory grows in
  // chunks as events come (about 200 bytes an event), not all at the start.
  // InvalidArgument for a capacity of 0 or above kMaxTraceEvents.
  static constexpr std::size_t kDefaultTraceEvents = std::size_t{1} << 18;
  void start_trace(std::size_t capacity = kDefaultTraceEvents);
  void stop_trace();
  // What was recorded so far; empty when the trace is off.
  std::optional<Trace> trace() const;
  // A phase marker in the trace ("load", "prefill"); nothing when it is off.
  void mark(std::string_view phase);

 private:
  friend class Buffer;
  void release(detail::Block* block) noexcept;
  static std::size_t block_size(const detail::Block* block);

  // Writes the trace to trace_path_ (NUVEC_TRACE), if any; never raises.
  void write_environment_trace() noexcept;
  // The same, of the trace up to the calling thread's last refusal (an
  // OutOfMemory on its way out: the program may not live to exit).
  void write_environment_trace_at_refusal() noexcept;

  std::unique_ptr<detail::Backend> backend_;
  std::unique_ptr<detail::Allocator> allocator_;
  std::filesystem::path trace_path_;  // NUVEC_TRACE: where the trace goes when the device does
};

// How many CUDA GPUs this process can use: 0 without one, without a driver,
// or when nuvec was built without CUDA.
int cuda_device_count();

}  // namespace nuvec
