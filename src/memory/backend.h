// Backend: where a device's memory comes from. The accounting core
// (Allocator) knows nothing else about the system; a backend supplies
// allocate/release, wire/unwire and map/unmap, and its size classes.
#pragma once

#include <cstddef>
#include <cstdint>
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

  // Keeps memory resident. Return 0, or the errno of the failure.
  virtual int wire(const void* address, std::size_t size) = 0;
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

  // Stream-ordered reuse. A block freed on `from` may still be in use by work
  // queued there; before work on `to` may use it, `to` must wait (on the
  // device, never the host) for everything queued on `from` so far.
  virtual void order_after(Stream from, Stream to) { (void)from, (void)to; }
  // The host waits for all queued device work: before cached memory goes
  // back to the system after the system refused an allocation.
  virtual void synchronize() {}
};

}  // namespace nuvec::detail
