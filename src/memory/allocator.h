// Allocator: the backend-independent accounting core of a Device — active,
// mapped and their peaks, the memory and cache limits, misses, residency and
// the event trace. It reuses memory through a BlockCache (an arena of
// reservations when the backend has them, else whole blocks; see
// memory/block_cache.h) and maps files through FileMapping. One lock guards
// all of it; in front of it, on backends that have them, each thread has a
// ThreadCache (memory/thread_cache.h) with an arena of its own and a budget
// of bytes this lock already counts as handed out, so that its hits and
// frees take only that thread's own lock. memory() takes the shared lock and
// every thread cache's, so it is one consistent snapshot. The policy, rule
// by rule, is docs/allocator-policy.md; the hit path is allocate() below.
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
#include "memory/thread_cache.h"
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
  // OutOfMemory or IoError. The hit path: this thread's cache serves (its
  // own lock only), or a block of the shared cache does (the cache allocates
  // nothing and calls no system function unless it wires).
  Block& allocate(std::size_t len, Stream stream = 0) {
    ThreadCache* local = nullptr;
    if (len <= thread_cache_max_) {
      local = find_thread_cache(*this, id_);
      if (local != nullptr) [[likely]] {
        const std::size_t size = classes_.round(len).value_or(0);
        local->lock().lock();
        Block* block = local->enabled() && local->budget() >= size ? local->take(size) : nullptr;
        if (block != nullptr) {
          local->spend(block->size);
          local->list_live(*block);
        }
        local->lock().unlock();
        if (block != nullptr) [[likely]] return *block;
      }
    }
    return allocate_shared(len, stream, local);
  }
  void free(Block& block) noexcept {
    // A block in a live list (any thread's) leaves it; then this thread's
    // cache keeps it if it can without sending another block elsewhere.
    ThreadCache* listed = block.listed_in.load(std::memory_order_acquire);
    if (listed == nullptr) return free_shared(block, /*ordered=*/true);
    ThreadCache* local = find_thread_cache(*this, id_);
    if (listed != local) {
      listed->lock().lock();
      const bool still = block.listed_in.load(std::memory_order_relaxed) == listed;
      if (still) listed->unlist(block);
      listed->lock().unlock();
      // Moved to the residency order meanwhile (the device started wiring).
      if (!still) return free_shared(block, /*ordered=*/true);
      if (local == nullptr) return free_shared(block, /*ordered=*/false);
      local->lock().lock();
    } else {
      local->lock().lock();
      if (block.listed_in.load(std::memory_order_relaxed) != local) {
        local->lock().unlock();
        return free_shared(block, /*ordered=*/true);
      }
      local->unlist(block);
    }
    const bool kept = local->enabled() && local->keep(block);
    local->lock().unlock();
    if (kept) [[likely]] return;
    free_routed(block, *local);
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

  // Thread caches (thread_cache.cc, under the registry's lock): a thread's
  // new cache joins, with a share of the cache limit; at the thread's exit
  // its blocks return to the shared cache.
  void attach(ThreadCache& local);
  void detach(ThreadCache& local) noexcept;
  const SizeClasses& size_classes() const { return classes_; }

 private:
  // While one is alive (the shared lock held), the thread caches the
  // Allocator locked (collect) stay locked: no hit or free of theirs is in
  // flight. Nested guards release at the outermost's end.
  class Collecting {
   public:
    explicit Collecting(const Allocator& allocator) : allocator_(allocator) { ++allocator_.collecting_; }
    ~Collecting() {
      if (--allocator_.collecting_ == 0) allocator_.release_collected();
    }
    Collecting(const Collecting&) = delete;
    Collecting& operator=(const Collecting&) = delete;

   private:
    const Allocator& allocator_;
  };
  // Under a Collecting guard: takes one thread cache's lock, or all.
  void collect(ThreadCache& local) const noexcept {
    if (!local.collected) {
      local.lock().lock();
      local.collected = true;
      ++collected_;
    }
  }
  void collect_all() const noexcept {
    if (collected_ == locals_.size()) return;
    for (ThreadCache* local : locals_) collect(*local);
  }
  void release_collected() const noexcept;

  // The shared path (its lock taken here).
  // `local`: this thread's cache (null if none), which serves from what it
  // holds, or from its arena, while thread caches serve its size.
  Block& allocate_shared(std::size_t len, Stream stream, ThreadCache* local);
  // `ordered`: the block is in the residency order (else in no list).
  void free_shared(Block& block, bool ordered) noexcept;
  // A free this thread's cache could not keep alone: the block, or one that
  // made room for it, goes to its home.
  void free_routed(Block& block, ThreadCache& local) noexcept;

  // Under a Collecting guard. A cached block (not live) joins the cache it
  // came from — the shared cache, or a thread's arena — bringing `budget`
  // bytes of handed-out count with it: the arena's thread cache keeps them
  // as budget while it serves, else they stop being handed out.
  void place_cached(Block& block, std::size_t budget) noexcept;
  // Takes a thread cache's budget back (handed out falls by it): no
  // statistic changes, and the cache stays locked until the guard ends.
  void take_budget(ThreadCache& local) noexcept;
  void take_all_budgets() noexcept;
  // Every budget taken back, this thread's first, then the others one by
  // one, until `handed_out_ + size` is within the peaks (then the peaks
  // stand) or all are taken (then handed_out_ is the live bytes exactly,
  // and the caller sets the peaks from it).
  void take_budgets_until_within_peaks(std::size_t size) noexcept;
  // A thread cache's stacks and slots sent to their homes (its budget taken
  // first), so that every cached block is in an arena or the shared cache.
  void flush(ThreadCache& local) noexcept;
  void flush_all() noexcept;
  void trim_locked(ThreadCache& local) noexcept;
  void trim_shared() noexcept;
  // The cache yields to live data: least recently freed memory of the
  // shared cache, then the exited threads' arenas, then the threads', is
  // released until live bytes + mapped + every cache + `size` are within
  // the memory limit, where they can be (budgets taken and thread caches
  // flushed first). Returns 0 or an errno.
  int release_caches_for(std::size_t size) noexcept;
  // The cached block that serves `size` from any arena (the shared one, the
  // arenas of exited threads, and when thread caches do not serve, every
  // thread's) under the shared lock, or null.
  Block* take_cached_anywhere(std::size_t size, Stream stream, std::size_t headroom, bool every_thread);
  // Bytes every cache holds (thread caches' locks taken), and their budgets.
  struct LocalTotals {
    std::size_t holdings = 0;
    std::size_t budgets = 0;
  };
  LocalTotals local_totals() const;
  std::size_t orphan_bytes() const;
  // Thread caches serve while nothing is traced or wired (shared lock held;
  // they are flushed when they stop).
  void update_locals();
  bool locals_serve() const { return trace_ == nullptr && residency_.limit() == 0; }
  // The cache limit shared by the shared cache, the exited threads' arenas
  // and the thread caches' shares.
  std::size_t shared_cache_limit() const {
    const std::size_t taken = local_capacity_ + orphan_bytes();
    return cache_limit_ - std::min(cache_limit_, taken);
  }
  void grant_capacity(ThreadCache& local);

  // The slow paths, out of line (lock held).
  [[noreturn]] void refuse_allocation(std::size_t len, std::optional<std::size_t> rounded);
  // A miss: the cache yields to live data, then takes memory it did not hold
  // (into `arena` if not null: a thread's).
  Block& take_new(std::size_t len, std::size_t size, std::size_t headroom, Stream stream, ArenaCache* arena);
  [[noreturn]] void refuse(std::size_t requested, const std::string& what);

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
  // Thread caches: blocks up to thread_cache_max_ (0: none); this device's
  // id for their lookup; the caches attached; the part of cache_limit_
  // granted to them.
  const std::size_t thread_cache_max_;
  const std::uint64_t id_;
  std::vector<ThreadCache*> locals_;
  std::size_t local_capacity_ = 0;
  // Arenas of threads that exited: a new thread takes one over; until then
  // their cached memory serves under this lock only.
  std::vector<std::unique_ptr<ArenaCache>> orphans_;
  mutable std::size_t collecting_ = 0;  // Collecting guards alive
  mutable std::size_t collected_ = 0;   // thread caches locked by collect()
};

}  // namespace nuvec::detail
