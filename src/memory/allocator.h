// Allocator: the backend-independent accounting core of a Device — active,
// mapped and their peaks, the memory and cache limits, misses, residency and
// the event trace. It reuses memory through a BlockCache (an arena of
// reservations when the backend has them, else whole blocks; see
// memory/block_cache.h) and maps files through FileMapping. One lock guards
// all of it, so memory() is one consistent snapshot. The policy, rule by
// rule, is docs/allocator-policy.md; the hit path is allocate() below.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "memory/backend.h"
#include "memory/block.h"
#include "memory/block_cache.h"
#include "memory/file_mapping.h"
#include "memory/residency.h"
#include "memory/trace_recorder.h"
#include "nuvec/device_counters.h"
#include "nuvec/mapped_file.h"
#include "nuvec/memory_stats.h"

namespace nuvec::detail {

class Allocator final : private CacheOwner, private MappingOwner {
 public:
  explicit Allocator(Backend& backend);
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  // Releases the cache. Live buffers or mappings at this point are a bug in
  // the caller (they would dangle): it reports them and aborts.
  ~Allocator();

  // A block of at least `len` bytes (len > 0) for work on `stream`; raises
  // OutOfMemory or IoError. The hit path: a cached block serves (the cache
  // allocates nothing and calls no system function unless it wires).
  Block& allocate(std::size_t len, Stream stream = 0) {
    const std::optional<std::size_t> rounded = classes_.round(len);
    std::lock_guard lock(mutex_);
    const std::size_t headroom = memory_limit_ - active_ - mapped_;
    if (!rounded || *rounded > headroom) [[unlikely]] refuse_allocation(len, rounded);
    Block* block = cache_->take_cached(*rounded, stream, headroom);
    const bool hit = block != nullptr;
    if (!hit) [[unlikely]] block = &take_new(len, *rounded, headroom, stream);
    active_ += block->size;
    residency_.append(*block);
    peak_ = std::max(peak_, active_);
    peak_with_mapped_ = std::max(peak_with_mapped_, active_ + mapped_);
    note(TraceEventKind::allocate, block->trace_id(), len, block->size, hit, {}, stream);
    return *block;
  }
  void free(Block& block) noexcept;

  // Maps `file` whole, or only `ranges` of it.
  std::shared_ptr<const Mapping> map(std::unique_ptr<OpenFile> file, std::span<const FileRange> ranges,
                                     bool whole_file);

  MemoryStats memory() const;
  DeviceCounters counters() const;
  void reset_peak();
  std::size_t set_memory_limit(std::size_t bytes);
  std::size_t set_cache_limit(std::size_t bytes);
  std::size_t set_wired_limit(std::size_t bytes);
  void clear_cache();

  // The event trace (docs/trace-format.md): off until started.
  // Events carry the tags (nuvec::Tag) open for `tagged`.
  void start_trace(std::size_t capacity, std::string device_name, const Device* tagged);
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
  // The slow paths, out of line (lock held).
  [[noreturn]] void refuse_allocation(std::size_t len, std::optional<std::size_t> rounded);
  // A miss: the cache yields to live data, then takes memory it did not hold.
  Block& take_new(std::size_t len, std::size_t size, std::size_t headroom, Stream stream);
  [[noreturn]] void refuse(std::size_t requested, const std::string& what);

  // CacheOwner and MappingOwner.
  void note_release(std::uint64_t id, std::size_t size) noexcept override;
  [[noreturn]] void refuse_system(std::size_t len, std::size_t size, int error) override;
  [[noreturn]] void refuse_bookkeeping(std::size_t len, std::size_t size) override;
  void unmap(FileMapping& mapping) noexcept override;

  MemoryStats snapshot() const;  // lock held
  // Lock held: records an event with the statistics as they are now. When
  // tracing is off this is one predictable branch.
  void note(TraceEventKind kind, std::uint64_t id = 0, std::uint64_t requested = 0, std::uint64_t size = 0,
            bool hit = false, std::string_view label = {}, Stream stream = 0) {
    if (trace_ != nullptr) [[unlikely]] trace_->record(kind, id, requested, size, hit, label, stream, snapshot());
  }
  static void note_wiring(void* self, const Resident& item, bool wired);

  Backend& backend_;
  const SizeClasses classes_;
  mutable std::mutex mutex_;
  Residency residency_;
  std::unique_ptr<BlockCache> cache_;  // after residency_, which it uses
  std::size_t active_ = 0;
  std::size_t peak_ = 0;
  std::size_t mapped_ = 0;
  std::size_t peak_with_mapped_ = 0;
  std::size_t peak_held_ = 0;  // of active + cache: rises only on a miss
  std::size_t memory_limit_ = 0;
  std::size_t cache_limit_ = 0;
  std::uint64_t system_allocations_ = 0;  // misses
  std::unique_ptr<TraceRecorder> trace_;
};

}  // namespace nuvec::detail
