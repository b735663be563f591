// Allocator: the backend-independent accounting core of a Device — active,
// mapped and their peaks, the memory and cache limits, misses, residency and
// the event trace. It reuses memory through two tiers, each behind its
// interface: in front, on backends that suit them, the per-thread tier
// (ThreadTier, memory/thread_tier.h), whose hits and frees take only that
// thread's lock, spending a budget of bytes this Allocator already counts
// as handed out; behind it the shared BlockCache (memory/block_cache.h: an
// arena of reservations when the backend has them, else whole blocks),
// under this Allocator's one lock. It maps files through FileMapping.
// memory() takes the lock and every thread cache's, so it is one consistent
// snapshot. The policy, rule by rule, is docs/allocator-policy.md; the hit
// path is allocate() below.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memory/backend.h"
#include "memory/block.h"
#include "memory/block_cache.h"
#include "memory/file_mapping.h"
#include "memory/residency.h"
#include "memory/thread_tier.h"
#include "memory/trace_recorder.h"
#include "nuvec/device_counters.h"
#include "nuvec/mapped_file.h"
#include "nuvec/memory_stats.h"

namespace nuvec::detail {

class Allocator final : private CacheOwner, private MappingOwner, private ThreadTierOwner {
 public:
  explicit Allocator(Backend& backend);
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  // Releases the cache. Live buffers or mappings at this point are a bug in
  // the caller (they would dangle): it reports them and aborts.
  ~Allocator();

  // A block of at least `len` bytes (len > 0) for work on `stream`; raises
  // OutOfMemory or IoError. The hit path: this thread's cache serves (its
  // own lock only), or a block of the shared cache does (the cache allocates
  // nothing and calls no system function unless it wires).
  Block& allocate(std::size_t len, Stream stream = 0) {
    ThreadCache* local = nullptr;
    if (Block* block = tier_->take(len, local)) [[likely]] return *block;
    return allocate_shared(len, stream, local);
  }
  // This thread's cache keeps the block if it can alone; else the shared path.
  void free(Block& block) noexcept {
    const ThreadTier::Freed freed = tier_->keep(block);
    if (freed.where == ThreadTier::Freed::Where::kept) [[likely]] return;
    free_shared(block, freed);
  }

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
  // The shared path (its lock taken here). `local`: this thread's cache
  // (null if none), which serves from what it holds, or from its arena,
  // while thread caches serve its size.
  Block& allocate_shared(std::size_t len, Stream stream, ThreadCache* local);
  void free_shared(Block& block, ThreadTier::Freed freed) noexcept;
  // A cached block (not live) joins the cache it came from: the shared
  // cache, or one of the thread tier's arenas.
  void put_cached(Block& block) noexcept;
  // The budgets taken back until `handed_out_ + size` is within the peaks
  // (then the peaks stand) or all are (then handed_out_ is the live bytes
  // exactly, and the caller sets the peaks from it).
  void take_budgets_within_peaks(std::size_t size) noexcept;
  // The cache yields to live data: least recently freed memory of the
  // shared cache, then of the thread tier, is released until live bytes +
  // mapped + every cache + `size` are within the memory limit, where they
  // can be (budgets taken and thread caches flushed first). 0 or an errno.
  int release_caches_for(std::size_t size) noexcept;
  // Thread caches serve while nothing is traced or wired.
  bool threads_serve() const { return trace_ == nullptr && residency_.limit() == 0; }
  std::size_t shared_cache_limit() const {
    return cache_limit_ - std::min(cache_limit_, tier_->cache_limit_share());
  }

  // The slow paths, out of line (lock held).
  [[noreturn]] void refuse_allocation(std::size_t len, std::optional<std::size_t> rounded);
  // A miss: the cache yields to live data, then `from` takes memory it did
  // not hold.
  Block& take_new(std::size_t len, std::size_t size, std::size_t headroom, Stream stream, BlockCache& from);
  [[noreturn]] void refuse(std::size_t requested, const std::string& what);

  // ThreadTierOwner.
  void hand_back(std::size_t bytes) noexcept override { handed_out_ -= bytes; }
  void put_shared(Block& block) noexcept override;
  void trim_shared() noexcept override;
  // CacheOwner and MappingOwner.
  void note_release(std::uint64_t id, std::size_t size) noexcept override;
  [[noreturn]] void refuse_system(std::size_t len, std::size_t size, int error) override;
  [[noreturn]] void refuse_bookkeeping(std::size_t len, std::size_t size) override;
  void unmap(FileMapping& mapping) noexcept override;

  // Lock held: the statistics now (takes the thread caches' locks).
  MemoryStats snapshot() const;
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
  std::unique_ptr<ThreadTier> tier_;   // likewise
  // Bytes handed out: live buffers, and every thread cache's budget. The
  // invariants that keep the statistics exact with thread caches:
  // handed_out_ <= peak_, handed_out_ + mapped_ <= peak_with_mapped_ and
  // <= memory_limit_ (a thread cache's hit raises live bytes to at most
  // handed_out_).
  std::size_t handed_out_ = 0;
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
