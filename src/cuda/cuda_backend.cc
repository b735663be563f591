// The CUDA backend. Device memory (never managed memory) on the backend's
// device comes, by default, from address space reserved with the driver's
// virtual memory API, physical memory mapped into it granule by granule as
// the allocator's arena carves blocks there (VmmReservations); or, as an
// option, from one plain cudaMalloc per block. Checkpoint files are mapped
// into host memory by the CPU backend's code and, when wired, page-locked
// with cudaHostRegister so that copies from them run at pinned speed.
#include "cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

#include "cpu/cpu_backend.h"
#include "cuda/cuda_error.h"
#include "cuda/device_guard.h"
#include "cuda/vmm_reservations.h"
#include "nuvec/cuda.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::cuda {

int device_count(std::string* why) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    if (why != nullptr) {
      int runtime = 0;
      cudaRuntimeGetVersion(&runtime);
      *why = fmt::format("no GPU, or no NVIDIA driver that runs CUDA {}.{}; {}", runtime / 1000, runtime % 1000 / 10,
                         error_text("cudaGetDeviceCount", error));
    }
    return 0;
  }
  if (why != nullptr) *why = count == 0 ? "cudaGetDeviceCount: no devices" : "";
  return count;
}

namespace {

// The errno a failed cudaMalloc leaves for the allocator: ENOMEM when the
// device is out of memory (the allocator may release its cache and retry),
// EIO for anything else (a broken context will not heal by retrying).
int errno_for(cudaError_t error) { return error == cudaErrorMemoryAllocation ? ENOMEM : EIO; }

class CudaBackend final : public detail::Backend,
                          private detail::ReservationSource,
                          private detail::BlockSource,
                          private detail::Wiring,
                          private detail::FileMapper,
                          private detail::HostCopy,
                          private detail::FileReader,
                          private detail::StreamOrder {
 public:
  CudaBackend(int ordinal, const CudaBackendOptions& options) : ordinal_(ordinal), host_(cpu::make_backend()) {
    const DeviceInfo info = device_info(ordinal);  // validates the ordinal
    name_ = fmt::format("cuda:{}", ordinal);
    total_memory_ = info.total_memory;
    DeviceGuard guard(ordinal_);
    if (options.reservations) {
      // The arena's page is the size classes' page: commits and decommits
      // come in whole 2 MiB granules, and blocks of 2 MiB and more stay
      // granule-aligned.
      reservations_ = std::make_unique<VmmReservations>(
          ordinal_, kLargeStep, options.reservation_bytes != 0 ? options.reservation_bytes : total_memory_,
          options.commit_chunk_bytes != 0 ? options.commit_chunk_bytes : VmmReservations::kDefaultChunkBytes);
    }
    int read_only = 0;
    // Mapped files are read-only: registering them needs cudaHostRegisterReadOnly.
    if (cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, ordinal_) != cudaSuccess) {
      (void)cudaGetLastError();
      read_only = 0;
    }
    can_register_read_only_ = read_only != 0;
  }

  ~CudaBackend() override {
    DeviceGuard guard(ordinal_);
    if (order_event_ != nullptr) cudaEventDestroy(order_event_);
    for (const auto& [stream, event] : free_events_) cudaEventDestroy(event);
  }

  std::string_view name() const override { return name_; }
  detail::SizeClasses size_classes() const override { return {kSmallStep, kLargeStep}; }

  std::size_t default_memory_limit() const override { return total_memory_; }
  // Uploads stage through page-locked memory, which counts in `wired`: a
  // device that wired nothing could upload nothing (docs/cuda.md, "The
  // wired limit on a GPU").
  std::size_t default_wired_limit() const override { return std::min(kDefaultWiredLimit, lockable_bytes()); }

  detail::ReservationSource* reservations() override { return reservations_ ? this : nullptr; }
  detail::BlockSource* blocks() override { return reservations_ ? nullptr : this; }
  // Device memory is always resident: only host mappings are wired.
  detail::Wiring* buffer_wiring() override { return nullptr; }
  detail::Wiring& mapping_wiring() override { return *this; }
  detail::FileMapper& files() override { return *this; }
  detail::HostCopy* host_copy() override { return this; }
  detail::StreamOrder* streams() override { return this; }
  detail::FileReader* file_reader() override { return this; }
  std::optional<int> gpu_ordinal() const override { return ordinal_; }

 private:
  // --- BlockSource (without reservations): one cudaMalloc each ---
  int allocate(std::size_t size, void** address) noexcept override {
    DeviceGuard guard(ordinal_);
    const cudaError_t error = cudaMalloc(address, size);
    if (error != cudaSuccess) {
      (void)cudaGetLastError();  // out of memory is not sticky: clear it so later calls succeed
      return errno_for(error);
    }
    blocks_.bytes += size;
    blocks_.peak = std::max(blocks_.peak, blocks_.bytes);
    return 0;
  }

  int release(void* address, std::size_t size, bool /*wired*/) noexcept override {
    // Device blocks are never wired: there is nothing to unlock.
    DeviceGuard guard(ordinal_);
    const cudaError_t error = cudaFree(address);
    if (error != cudaSuccess) {
      (void)cudaGetLastError();
      return errno_for(error);
    }
    blocks_.bytes -= size;
    return 0;
  }

  // --- ReservationSource (the arena): reserved address space, committed granule by granule ---
  int reserve(std::size_t min_size, bool /*huge_pages*/, Reservation* out) noexcept override {
    *out = reservations_->reserve(min_size);
    return out->base != nullptr ? 0 : errno;
  }
  int commit(void* address, std::size_t size) noexcept override { return reservations_->commit(address, size); }
  int decommit(void* address, std::size_t size) noexcept override {
    return reservations_->decommit(address, size);
  }
  int unreserve(void* base, std::size_t size) noexcept override { return reservations_->unreserve(base, size); }

  // What the device gave: granules mapped into reservations, or cudaMalloc'd
  // blocks (both sources answer; the allocator asks the one it uses).
  std::optional<detail::Committed> committed() const override {
    return reservations_ ? reservations_->committed() : blocks_;
  }
  void reset_committed_peak() noexcept override {
    if (reservations_) {
      reservations_->reset_committed_peak();
    } else {
      blocks_.peak = blocks_.bytes;
    }
  }

  // --- Wiring: page-locks host memory; only mappings are host memory here ---
  int wire(const void* address, std::size_t size) noexcept override {
    if (size == 0) return 0;
    std::lock_guard lock(mutex_);
    const auto mapping = mappings_.find(address);
    if (mapping == mappings_.end() || mapping->second != size) return EOPNOTSUPP;
    if (!can_register_read_only_) return EOPNOTSUPP;
    DeviceGuard guard(ordinal_);
    // Portable: pinned for every device, so one mapping can feed several GPUs.
    const cudaError_t error = cudaHostRegister(const_cast<void*>(address), size,
                                               cudaHostRegisterPortable | cudaHostRegisterReadOnly);
    if (error != cudaSuccess) {
      (void)cudaGetLastError();
      return error == cudaErrorMemoryAllocation ? ENOMEM : EIO;
    }
    registered_.emplace(address, size);
    return 0;
  }

  void unwire(const void* address, std::size_t size) noexcept override {
    if (size == 0) return;
    std::lock_guard lock(mutex_);
    unregister(address);
  }

  // Page-locked memory is host memory: at most the machine's. The driver
  // pins without charging RLIMIT_MEMLOCK, so that limit does not apply.
  std::size_t lockable_bytes() const override {
    const std::size_t physical = physical_memory();
    return physical == 0 ? std::numeric_limits<std::size_t>::max() : physical;
  }
  std::string_view how_to_lock_more() const override {
    return "cudaHostRegister could not page-lock more host memory (free host memory, or wire fewer mappings)";
  }

  // --- FileMapper: the CPU's host mappings, remembered for wiring ---
  std::unique_ptr<detail::OpenFile> open(const std::filesystem::path& path) override {
    return host_->files().open(path);
  }
  std::unique_ptr<detail::OpenFile> open_descriptor(int fd, const std::filesystem::path& path) override {
    return host_->files().open_descriptor(fd, path);
  }

  const void* map(const detail::OpenFile& file, std::uint64_t offset, std::size_t length) override {
    const void* address = host_->files().map(file, offset, length);
    std::lock_guard lock(mutex_);
    mappings_.emplace(address, length);
    return address;
  }

  void unmap(const void* address, std::size_t length) noexcept override {
    {
      // The allocator unmaps without unwiring (munmap unlocks on the CPU);
      // a registration must go first or the driver would keep the pages.
      std::lock_guard lock(mutex_);
      unregister(address);
      mappings_.erase(address);
    }
    host_->files().unmap(address, length);
  }

  // --- StreamOrder --- `to` waits, on the device, for the work queued on `from` so far; the host
  // does not block. Streams are the bits of a cudaStream_t, 0 the legacy
  // default stream.
  //
  // A free on a stream records that stream's event (one per stream, each
  // free moving it on): a block cached from `from` was freed no later than
  // the event's point, so waiting for it is enough, and the reuse need not
  // touch `from`, which may be destroyed by then (recording an event on a
  // destroyed stream is an error: "context is destroyed" under
  // compute-sanitizer). A destroyed stream's handle is freed only once its
  // work has finished, so a new stream given the same bits inherits an event
  // whose old point has passed. Stream 0 never goes: its order is taken at
  // the reuse (one shared event), as before.
  void freed_on(detail::Stream stream) noexcept override {
    std::lock_guard lock(event_mutex_);
    DeviceGuard guard(ordinal_);
    const auto cuda_stream = reinterpret_cast<cudaStream_t>(stream);
    auto [it, fresh] = free_events_.try_emplace(stream, nullptr);
    if (fresh && cudaEventCreateWithFlags(&it->second, cudaEventDisableTiming) != cudaSuccess) {
      it->second = nullptr;
    }
    if (it->second != nullptr && cudaEventRecord(it->second, cuda_stream) == cudaSuccess) return;
    // No event to move on: the host waits for the stream now instead, which
    // is slower but never unsafe (the event's old point, if any, is then
    // passed too). If even that fails, the stream was not a live one.
    (void)cudaGetLastError();
    if (cudaStreamSynchronize(cuda_stream) != cudaSuccess) (void)cudaGetLastError();
  }

  void order_after(detail::Stream from, detail::Stream to) noexcept override {
    if (from == to) return;
    std::lock_guard lock(event_mutex_);  // one event: a record and its wait must not interleave with another pair's
    DeviceGuard guard(ordinal_);
    const auto to_stream = reinterpret_cast<cudaStream_t>(to);
    // Every free on a stream other than 0 recorded its event (freed_on).
    if (const auto it = free_events_.find(from); it != free_events_.end() && it->second != nullptr) {
      if (cudaStreamWaitEvent(to_stream, it->second, 0) == cudaSuccess) return;
      (void)cudaGetLastError();
      // The wait could not be queued: the host waits for the event instead.
      if (cudaEventSynchronize(it->second) != cudaSuccess) (void)cudaGetLastError();
      return;
    }
    // Stream 0, or a block whose free recorded nothing: its order is taken now.
    const auto from_stream = reinterpret_cast<cudaStream_t>(from);
    if (order_event_ == nullptr &&
        cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming) != cudaSuccess) {
      order_event_ = nullptr;
    }
    // A wait takes the event's state at the time of the call, so one event
    // serves every pair.
    if (order_event_ != nullptr && cudaEventRecord(order_event_, from_stream) == cudaSuccess &&
        cudaStreamWaitEvent(to_stream, order_event_, 0) == cudaSuccess) {
      return;
    }
    // The device could not be told to wait: the host waits instead, which is
    // slower but never unsafe. If even that fails the context is broken, and
    // the next call on it reports so.
    (void)cudaGetLastError();
    if (cudaStreamSynchronize(from_stream) != cudaSuccess) (void)cudaGetLastError();
  }

  // The host waits for all work on the device: before the cache goes back
  // after a failed cudaMalloc, no queued work may still use a cached block.
  void synchronize() noexcept override {
    DeviceGuard guard(ordinal_);
    if (cudaDeviceSynchronize() != cudaSuccess) (void)cudaGetLastError();
  }

  // --- HostCopy ---
  void copy_from_host(void* device_destination, const void* host_source, std::size_t bytes) override {
    DeviceGuard guard(ordinal_);
    check(cudaMemcpy(device_destination, host_source, bytes, cudaMemcpyHostToDevice), "cudaMemcpy",
          fmt::format("copy {} into {}", format_bytes(bytes), name_));
  }

  // --- FileReader: the upload path (upload.cc) ---
  Buffer read(Device& device, int fd, std::size_t length, std::span<const FileRead> reads) override {
    return read_file(device, fd, length, reads).buffer;
  }

  // Lock held.
  void unregister(const void* address) noexcept {
    const auto it = registered_.find(address);
    if (it == registered_.end()) return;
    DeviceGuard guard(ordinal_);
    if (const cudaError_t error = cudaHostUnregister(const_cast<void*>(address)); error != cudaSuccess) {
      (void)cudaGetLastError();
      std::fprintf(stderr, "nuvec: warning: %s\n", error_text("cudaHostUnregister", error).c_str());
    }
    registered_.erase(it);
  }

  const int ordinal_;
  std::string name_;
  std::size_t total_memory_ = 0;
  std::unique_ptr<VmmReservations> reservations_;  // the arena's; null for whole blocks
  detail::Committed blocks_;  // cudaMalloc'd bytes, whole blocks only (under the allocator's lock)
  bool can_register_read_only_ = false;
  std::unique_ptr<detail::Backend> host_;  // mapping files is the CPU's work

  std::mutex mutex_;
  std::map<const void*, std::size_t> mappings_;    // live host mappings: the only memory that can be wired
  std::map<const void*, std::size_t> registered_;  // those of them that are cudaHostRegister'ed

  std::mutex event_mutex_;
  cudaEvent_t order_event_ = nullptr;                   // stream 0's order, taken at each reuse
  std::map<detail::Stream, cudaEvent_t> free_events_;  // each other stream's last free (freed_on)
};

}  // namespace

std::unique_ptr<detail::Backend> make_backend(int ordinal, const CudaBackendOptions& options) {
  return std::make_unique<CudaBackend>(ordinal, options);
}

std::unique_ptr<detail::Backend> make_backend(int ordinal) {
  CudaBackendOptions options;
  if (const char* arena = std::getenv("NUVEC_CUDA_ARENA"); arena != nullptr) {
    const std::string_view value = arena;
    if (value != "0" && value != "1") {
      throw InvalidArgument(fmt::format(
          "NUVEC_CUDA_ARENA={}: expected 1 (blocks carved from reserved address space, the default) or 0 (one "
          "cudaMalloc per block)",
          value));
    }
    options.reservations = value == "1";
  }
  if (const char* chunk = std::getenv("NUVEC_CUDA_COMMIT_MIB"); chunk != nullptr) {
    const std::string_view value = chunk;
    std::size_t mib = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), mib);
    if (ec != std::errc{} || end != value.data() + value.size() || mib == 0 || mib > (std::size_t{1} << 20) ||
        mib % 2 != 0) {
      throw InvalidArgument(fmt::format(
          "NUVEC_CUDA_COMMIT_MIB={}: expected an even number of MiB from 2 to 1048576 (the largest physical "
          "allocation one commit of the CUDA arena maps; unset: 32)",
          value));
    }
    options.commit_chunk_bytes = mib << 20;
  }
  return make_backend(ordinal, options);
}

}  // namespace nuvec::cuda
