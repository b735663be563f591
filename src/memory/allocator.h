// Allocator: the backend-independent accounting core of a Device — size
// classes, the cache, the memory limit, peaks and residency. One lock guards
// all of it, so memory() is one consistent snapshot.
// The cache is an Arena of address-space reservations when the backend can
// reserve (the CPU), else a BufferCache of whole blocks (each from
// Backend::allocate). The policy, rule by rule, is docs/allocator-policy.md.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "memory/arena.h"
#include "memory/backend.h"
#include "memory/block.h"
#include "memory/buffer_cache.h"
#include "memory/residency.h"
#include "memory/trace_recorder.h"
#include "nuvec/mapped_file.h"
#include "nuvec/memory_stats.h"

namespace nuvec::detail {

class Allocator {
 public:
  explicit Allocator(Backend& backend);
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  // Releases the cache. Live buffers or mappings at this point are a bug in
  // the caller (they would dangle): it reports them and aborts.
  ~Allocator();

  // A block of at least `len` bytes (len > 0) for work on `stream`; raises
  // OutOfMemory or IoError.
  Block& allocate(std::size_t len, Stream stream = 0);
  void free(Block& block) noexcept;

  // Maps `file` whole, or only `ranges` of it.
  std::shared_ptr<const Mapping> map(std::unique_ptr<OpenFile> file, std::span<const FileRange> ranges,
                                     bool whole_file);

  MemoryStats memory() const;
  // Allocations not served by the cache so far: with an arena, takes of
  // holes (fresh or decommitted address space) and of new reservations;
  // without, system allocations. Not a MemoryStats field (the contract's);
  // `nuvec replay` reports it.
  std::uint64_t misses() const;
  // The device memory the backend holds physically (Backend::committed):
  // granule-rounded, so at least active + cache; empty on the CPU. Its peak
  // restarts with reset_peak(). Not a MemoryStats field either.
  std::optional<Backend::Committed> committed() const;
  // The highest active + cache since the device was made or reset_peak():
  // what it held for buffers at its fullest, PyTorch's max_memory_reserved.
  // Not a MemoryStats field either.
  std::size_t peak_held() const;
  void reset_peak();
  std::size_t set_memory_limit(std::size_t bytes);
  std::size_t set_cache_limit(std::size_t bytes);
  std::size_t set_wired_limit(std::size_t bytes);
  void clear_cache();

  // The event trace (docs/trace-format.md): off until started.
  void start_trace(std::size_t capacity, std::string device_name);
  void stop_trace();
  std::optional<Trace> trace() const;
  void mark(std::string_view phase);

  // Page-locked memory that is no buffer or mapping of this device (a GPU
  // upload's staging) counts in `wired`, within wired_limit. `wire`: takes
  // `bytes`, or returns false and changes nothing if they would pass the
  // limit; otherwise gives `bytes` taken before back (waiting mappings that
  // now fit are wired). Traced as wire/unwire events of `id`.
  bool wire_staging(std::uint64_t id, std::size_t bytes, bool wire);

 private:
  class FileMapping;

  void unmap(FileMapping& mapping) noexcept;
  MemoryStats snapshot() const;  // lock held
  // Lock held: a cached block taken out of the cache becomes live (a hit).
  Block& hand_out_cached(Block& block, Stream stream, std::size_t len);
  void note_growth();            // lock held: raise the peaks
  // Lock held: records an event with the statistics as they are now. When
  // tracing is off this is one predictable branch.
  void note(TraceEventKind kind, std::uint64_t id = 0, std::uint64_t requested = 0, std::uint64_t size = 0,
            bool hit = false, std::string_view label = {}) {
    if (trace_ != nullptr) [[unlikely]] trace_->record(kind, id, requested, size, hit, label, snapshot());
  }
  static void note_wiring(void* self, const Resident& item, bool wired);
  // Releases least recently freed blocks while `over()` holds; lock held.
  // Returns 0, or the errno of a release the system refused (that block
  // stays cached). Waiting items are promoted if wiring fell.
  template <class Over>
  int release_cached_while(Over over) noexcept;
  int release_cached(Block& block) noexcept;
  int release_extent(Block& extent) noexcept;  // arena
  [[noreturn]] void refuse(std::size_t requested, const std::string& what);
  [[noreturn]] void refuse_system(std::size_t len, std::size_t size, int error);

  // Lock held: the cache, whichever it is.
  std::size_t cache_bytes() const { return arena_ ? arena_->bytes() : cache_.bytes(); }
  Block* oldest_cached() const { return arena_ ? arena_->oldest() : cache_.oldest(); }

  // The arena's allocation path (lock held, size within the limit).
  Block& allocate_in_arena(std::size_t len, std::size_t size, std::size_t headroom, Stream stream);
  // The low `size` bytes of `extent` become a live block on `stream`, wired if
  // it fits; raises IoError if wiring fails (nothing changes then).
  Block& take(Block& extent, std::size_t size, Stream stream);
  // A hole of at least `size` bytes: a new reservation, and if the system
  // refuses, the cache is released (and unused reservations returned) and
  // the holes and the system are tried once more. Raises OutOfMemory.
  Block& reserve(std::size_t len, std::size_t size);
  // Returns reservations with nothing live or cached in them.
  void unreserve_unused() noexcept;
  // Commits the whole pages the low `size` bytes of `hole` cover
  // (Backend::commit): 0, or the backend's errno.
  int commit_pages(const Block& hole, std::size_t size) noexcept;
  // Returns `reservation` (one made for an allocation that did not use it,
  // or null) to the system if nothing is in it, and uncounts it.
  void return_if_unused(Reservation* reservation) noexcept;

  Backend& backend_;
  const SizeClasses classes_;
  mutable std::mutex mutex_;
  BufferCache cache_;            // without an arena
  std::unique_ptr<Arena> arena_;  // when the backend can reserve
  Residency residency_;
  std::size_t active_ = 0;
  std::size_t peak_ = 0;
  std::size_t mapped_ = 0;
  std::size_t peak_with_mapped_ = 0;
  std::size_t peak_held_ = 0;  // of active + cache
  std::size_t memory_limit_ = 0;
  std::size_t cache_limit_ = 0;
  std::uint64_t system_allocations_ = 0;
  std::uint64_t misses_ = 0;
  std::unique_ptr<TraceRecorder> trace_;
};

}  // namespace nuvec::detail
