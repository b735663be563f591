// Backend: where a device's memory comes from. The accounting core
// (Allocator) knows nothing else about the system; a backend supplies
// allocate/release (or address-space reservations), wire/unwire and
// map/unmap, and its size classes.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "memory/size_classes.h"

namespace nuvec::detail {

// A queue of device work: the bits of a cudaStream_t on CUDA (0 = the legacy
// default stream); always 0 on the CPU, which has none.
using Stream = std::uintptr_t;

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

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;

  // The sizes blocks come in; its page also measures the best-fit bound.
  virtual SizeClasses size_classes() const = 0;

  // `size` bytes from the system (size is a size class). Returns nullptr on
  // failure with errno set; the caller raises.
  virtual void* allocate(std::size_t size) = 0;
  // Returns memory to the system, dropping its lock if `wired`. Returns 0, or
  // the errno of a release the system refused (the memory is then still
  // held, and still locked if it was).
  virtual int release(void* address, std::size_t size, bool wired) noexcept = 0;

  // Address-space reservations. A backend that has them (can_reserve()) gets
  // its blocks carved from an arena of reservations (memory/arena.h) instead
  // of one allocate() per block; the others keep allocate/release.
  struct Reservation {
    void* base = nullptr;
    std::size_t size = 0;
  };
  virtual bool can_reserve() const { return false; }
  // At least `min_size` bytes of address space, aligned to the size classes'
  // page, whose pages are committed before use: by the system when they are
  // first touched on the CPU (they read as zeros until then), by commit() on
  // a GPU (uninitialised, as cudaMalloc's). The backend picks the size (it
  // may reserve much more than asked). `huge_pages`: it will hold blocks of a
  // page and more, so large pages are welcome. Returns {nullptr, 0} with errno
  // set on failure.
  virtual Reservation reserve(std::size_t min_size, bool huge_pages) {
    (void)min_size, (void)huge_pages;
    errno = ENOSYS;
    return {};
  }
  // Makes [address, address + size) (whole pages of the size classes,
  // inside one reservation) usable before a block carved there is handed
  // out. The CPU needs nothing (the kernel commits pages on first touch); a
  // GPU maps physical memory here. Pages already committed stay as they
  // are. Returns 0, or the errno of a refusal (ENOMEM: the device is out of
  // memory; nothing new is then committed).
  virtual int commit(void* address, std::size_t size) noexcept {
    (void)address, (void)size;
    return 0;
  }
  // Gives the pages of [address, address + size) (whole pages, inside one
  // reservation, none locked) back to the system; the range stays reserved
  // (on the CPU it reads as zeros when next touched; a GPU commits it again
  // first). Pages not committed are skipped. Returns 0, or the errno of a
  // refusal (the pages are then still committed).
  virtual int decommit(void* address, std::size_t size) noexcept {
    (void)address, (void)size;
    return ENOSYS;
  }
  // Returns a whole reservation to the system (its locks go with it).
  // Returns 0, or the errno of a refusal.
  virtual int unreserve(void* base, std::size_t size) noexcept {
    (void)base, (void)size;
    return ENOSYS;
  }

  // What a backend that commits explicitly (commit(), or one allocate() per
  // block) holds physically now, and the most it held since it was made or
  // reset_committed_peak(). Empty where the system commits pages on first
  // touch (the CPU), which the kernel counts (VmRSS), not the backend.
  struct Committed {
    std::size_t bytes = 0;
    std::size_t peak = 0;
  };
  virtual std::optional<Committed> committed() const { return std::nullopt; }
  virtual void reset_committed_peak() noexcept {}

  // Whether the host can read and write its buffers directly (a positioned
  // read into one works): the CPU's, not a GPU's device memory.
  virtual bool host_addressable() const { return true; }

  // Copies host bytes into this backend's memory (`destination` is inside a
  // block it handed out). The CPU's memory is the host's: a memcpy.
  virtual void copy_from_host(void* destination, const void* source, std::size_t bytes) {
    std::memcpy(destination, source, bytes);
  }

  // Keeps memory resident. Return 0, or the errno of the failure.
  virtual int wire(const void* address, std::size_t size) = 0;
  // Whether buffers can be wired at all. A GPU's buffers are device memory,
  // which is always resident: only its host mappings are wired (page-locked).
  virtual bool wires_buffers() const { return true; }
  virtual void unwire(const void* address, std::size_t size) noexcept = 0;

  // Opens `path` for mapping; raises IoError.
  virtual std::unique_ptr<OpenFile> open(const std::filesystem::path& path) = 0;
  // The file open as `fd` (duplicated, not taken), named `path` in messages;
  // raises IoError.
  virtual std::unique_ptr<OpenFile> open_descriptor(int fd, const std::filesystem::path& path) = 0;
  // Maps `length` bytes at page-aligned `offset` read-only; raises IoError.
  virtual const void* map(const OpenFile& file, std::uint64_t offset, std::size_t length) = 0;
  // A refused unmap is reported on stderr: the caller, a destructor, cannot raise.
  virtual void unmap(const void* address, std::size_t length) noexcept = 0;

  // The most bytes this process may wire (physical memory; the memlock
  // rlimit where it applies).
  virtual std::size_t lockable_bytes() const = 0;
  // Default memory limit (the device's memory).
  virtual std::size_t default_memory_limit() const = 0;
  // Default wired limit: 0 (nothing is wired until asked) unless the device
  // needs page-locked memory to work at all (a GPU's upload staging).
  virtual std::size_t default_wired_limit() const { return 0; }

  // Stream-ordered reuse. A block freed on `from` may still be in use by work
  // queued there; before work on `to` may use it, `to` must wait (on the
  // device, never the host) for everything queued on `from` so far.
  virtual void order_after(Stream from, Stream to) { (void)from, (void)to; }
  // The host waits for all queued device work: before cached memory goes
  // back to the system after the system refused an allocation.
  virtual void synchronize() {}
};

}  // namespace nuvec::detail
