// Backend: where a device's memory comes from, as a few small interfaces.
// The accounting core (Allocator) knows nothing else about the system. A
// backend implements what it has and returns it from the accessors at the
// bottom; a missing interface (nullptr) says what the device lacks, so there
// are no capability flags. Each interface has one error convention, stated
// on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "nuvec/buffer.h"
#include "nuvec/device.h"

#include "memory/size_classes.h"

namespace nuvec::detail {

// A queue of device work: the bits of a cudaStream_t on CUDA (0 = the legacy
// default stream); always 0 on the CPU, which has none.
using Stream = std::uintptr_t;

// What a source that commits explicitly (a GPU's granules, or one cudaMalloc
// per block) holds physically now, and the most it held since it was made or
// reset_committed_peak().
struct Committed {
  std::size_t bytes = 0;
  std::size_t peak = 0;
};

// Whole blocks, one system allocation each, reused whole by the cache.
// Errors: the errno of the refusal as the return value (ENOMEM: out of
// memory, the allocator may release its cache and retry); never raises.
class BlockSource {
 public:
  virtual ~BlockSource() = default;
  // `size` bytes (a size class) into *address; 0 or the errno.
  virtual int allocate(std::size_t size, void** address) noexcept = 0;
  // Returns memory to the system, dropping its lock if `wired`; 0 or the
  // errno of a release the system refused (the memory is then still held,
  // and still locked if it was).
  virtual int release(void* address, std::size_t size, bool wired) noexcept = 0;
  // Empty where the system commits pages on first touch (the CPU), which
  // the kernel counts (VmRSS), not the backend.
  virtual std::optional<Committed> committed() const { return std::nullopt; }
  virtual void reset_committed_peak() noexcept {}
};

// Address-space reservations, carved into blocks by the allocator's arena
// (memory/arena_cache.h). Errors as BlockSource: errno return values.
class ReservationSource {
 public:
  struct Reservation {
    void* base = nullptr;
    std::size_t size = 0;
  };
  virtual ~ReservationSource() = default;
  // At least `min_size` bytes of address space into *out, aligned to the
  // size classes' page, whose pages are committed before use: by the system
  // when first touched on the CPU (they read as zeros until then), by
  // commit() on a GPU (uninitialised, as cudaMalloc's). The source picks the
  // size (it may reserve much more than asked). `huge_pages`: it will hold
  // blocks of a page and more, so large pages are welcome.
  virtual int reserve(std::size_t min_size, bool huge_pages, Reservation* out) noexcept = 0;
  // Makes [address, address + size) (whole pages, inside one reservation)
  // usable before a block carved there is handed out. The CPU needs nothing
  // (the kernel commits on first touch); a GPU maps physical memory. Pages
  // already committed stay as they are. ENOMEM: the device is out of
  // memory; nothing new is then committed.
  virtual int commit(void* address, std::size_t size) noexcept {
    (void)address, (void)size;
    return 0;
  }
  // Gives the pages of [address, address + size) (whole pages, inside one
  // reservation, none locked) back to the system; the range stays reserved.
  // Pages not committed are skipped. On a refusal the pages stay committed.
  virtual int decommit(void* address, std::size_t size) noexcept = 0;
  // Returns a whole reservation to the system (its locks go with it).
  virtual int unreserve(void* base, std::size_t size) noexcept = 0;
  // As BlockSource::committed.
  virtual std::optional<Committed> committed() const { return std::nullopt; }
  virtual void reset_committed_peak() noexcept {}
};

// Keeping memory resident (locked, page-locked). Errors: errno return values.
class Wiring {
 public:
  virtual ~Wiring() = default;
  virtual int wire(const void* address, std::size_t size) noexcept = 0;
  virtual void unwire(const void* address, std::size_t size) noexcept = 0;
  // The most bytes this process may wire.
  virtual std::size_t lockable_bytes() const = 0;
  // How to get more wired when the system refuses, for messages ("raise the
  // process's lock limit ...").
  virtual std::string_view how_to_lock_more() const = 0;
};

// An open file, ready to be mapped; closes itself.
class OpenFile {
 public:
  explicit OpenFile(std::filesystem::path path) : path_(std::move(path)) {}
  virtual ~OpenFile() = default;
  virtual std::uint64_t size() const = 0;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Read-only file mappings in host memory. Errors: IoError, naming the file;
// unmap, called from destructors, reports a refusal on stderr.
class FileMapper {
 public:
  virtual ~FileMapper() = default;
  virtual std::unique_ptr<OpenFile> open(const std::filesystem::path& path) = 0;
  // The file open as `fd` (duplicated, not taken), named `path` in messages.
  virtual std::unique_ptr<OpenFile> open_descriptor(int fd, const std::filesystem::path& path) = 0;
  // Maps `length` bytes at page-aligned `offset`.
  virtual const void* map(const OpenFile& file, std::uint64_t offset, std::size_t length) = 0;
  virtual void unmap(const void* address, std::size_t length) noexcept = 0;
};

// Copies into memory the host cannot address (a GPU's). Errors: exceptions
// (IoError with the driver's message).
class HostCopy {
 public:
  virtual ~HostCopy() = default;
  // `destination` is inside a block this backend handed out.
  virtual void copy_from_host(void* destination, const void* source, std::size_t bytes) = 0;
};

// Reads file ranges into memory the host cannot address, by the device's own
// path (a GPU's: page-locked staging, then copies). Errors: exceptions
// (OutOfMemory, InvalidArgument, IoError), nothing changed on a refusal.
class FileReader {
 public:
  virtual ~FileReader() = default;
  // A new buffer of `device` (this backend's) of `length` bytes holding `reads` of `fd`.
  virtual Buffer read(Device& device, int fd, std::size_t length, std::span<const FileRead> reads) = 0;
};

// Stream-ordered reuse. Never fails: where the device cannot be told to wait,
// the host waits instead.
class StreamOrder {
 public:
  virtual ~StreamOrder() = default;
  // A block freed on `from` may still be in use by work queued there; before
  // work on `to` may use it, `to` waits (on the device, not the host) for
  // everything queued on `from` so far.
  virtual void order_after(Stream from, Stream to) noexcept = 0;
  // A block was freed on `stream` (never 0, the legacy default stream, which
  // lives as long as the process): the backend notes how far the stream's
  // queued work reaches now, so that a later order_after(stream, ...) waits
  // for that point without touching `stream` itself, which its owner may
  // have destroyed by then (a session's stream ends with the session, its
  // blocks stay cached).
  virtual void freed_on(Stream stream) noexcept = 0;
  // The host waits for all queued device work: before cached memory goes
  // back to the system after the system refused an allocation.
  virtual void synchronize() noexcept = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  // The sizes blocks come in; its page also measures the best-fit bound.
  virtual SizeClasses size_classes() const = 0;
  // Default memory limit (the device's memory).
  virtual std::size_t default_memory_limit() const = 0;
  // Default wired limit: 0 (nothing is wired until asked) unless the device
  // needs page-locked memory to work at all (a GPU's upload staging).
  virtual std::size_t default_wired_limit() const { return 0; }

  // Where blocks come from: reservations (the arena) when the backend has
  // them, else whole blocks. One of the two is not null.
  virtual ReservationSource* reservations() { return nullptr; }
  virtual BlockSource* blocks() { return nullptr; }
  // Wiring of buffers; null where buffers are always resident (device
  // memory: only its host mappings are wired).
  virtual Wiring* buffer_wiring() = 0;
  // Wiring of mapped files, which are host memory on every backend.
  virtual Wiring& mapping_wiring() = 0;
  virtual FileMapper& files() = 0;
  // Null where the host addresses the device's memory directly (the CPU's:
  // a positioned read or a memcpy into a buffer works).
  virtual HostCopy* host_copy() { return nullptr; }
  // Null where there are no streams (the CPU).
  virtual StreamOrder* streams() { return nullptr; }
  // Null where host_copy() is: a positioned read writes the buffer directly.
  virtual FileReader* file_reader() { return nullptr; }
  // The CUDA ordinal of a GPU backend; empty on the CPU.
  virtual std::optional<int> gpu_ordinal() const { return std::nullopt; }
  // Blocks up to this size are cached per thread in front of the shared
  // cache (memory/thread_cache.h); 0: none. Only a backend without streams
  // may have them (a thread cache keeps no stream order).
  virtual std::size_t thread_cache_max() const { return 0; }
};

}  // namespace nuvec::detail
