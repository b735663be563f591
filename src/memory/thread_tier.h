// ThreadTier: what the Allocator asks of the per-thread tier in front of its
// shared cache. Each thread has a ThreadCache (memory/thread_cache.h) with a
// budget of bytes the Allocator already counts as handed out, so that its
// steady-state hit and free (take() and keep(), inline below) take only that
// thread's own lock. Everything else runs under the Allocator's lock: budgets
// taken back, blocks a thread cache could not keep sent to their homes, the
// tier's arenas (each thread's, and those of threads that exited) searched,
// trimmed and released, its share of the cache limit, serving on and off.
// One implementation, ThreadCaches (memory/thread_caches.h), made by
// make_thread_tier; on a backend it does not suit (streams, or a thread-cache
// limit of 0) it serves nothing and every request takes the shared path.
//
// The tier changes only what the thread caches hold; the Allocator keeps
// the accounting. Whatever budget stops being handed out, the tier reports
// through ThreadTierOwner::hand_back, so that the Allocator's count of
// handed-out bytes (live bytes plus every budget) stays exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "memory/arena.h"
#include "memory/backend.h"
#include "memory/block.h"
#include "memory/block_cache.h"
#include "memory/residency.h"
#include "memory/size_classes.h"
#include "memory/thread_cache.h"
#include "memory/thread_registry.h"

namespace nuvec::detail {

// What the tier reports to the Allocator that owns it; called with the
// Allocator's lock held.
class ThreadTierOwner {
 public:
  // `bytes` of thread caches' budget stop counting as handed out.
  virtual void hand_back(std::size_t bytes) noexcept = 0;
  // A cached block whose home is the shared cache goes there (trimmed to
  // its part of the cache limit).
  virtual void put_shared(Block& block) noexcept = 0;
  // The shared cache's part of the cache limit shrank (cache_limit_share()
  // grew): the shared cache is trimmed to it.
  virtual void trim_shared() noexcept = 0;

 protected:
  ~ThreadTierOwner() = default;
};

class ThreadTier {
 public:
  ThreadTier(SizeClasses classes, std::size_t max_block, std::uint64_t id)
      : classes_(classes), max_block_(max_block), id_(id) {}
  ThreadTier(const ThreadTier&) = delete;
  ThreadTier& operator=(const ThreadTier&) = delete;
  virtual ~ThreadTier() = default;

  // Requests up to this many bytes are served by thread caches (0: none).
  std::size_t max_block() const { return max_block_; }
  const SizeClasses& size_classes() const { return classes_; }
  // Whether any thread cache is attached; read on the shared path, so not a
  // virtual call.
  bool has_threads() const { return attached_ != 0; }

  // The hit path, under this thread's cache's lock only: a block for `len`
  // bytes from what the cache holds, within its budget, now live and in its
  // live list; else null, with `local` this thread's cache (or null) for
  // the shared path.
  Block* take(std::size_t len, ThreadCache*& local) noexcept {
    if (len > max_block_) return nullptr;
    local = find_thread_cache(*this, id_);
    if (local == nullptr) [[unlikely]] return nullptr;
    const std::size_t size = classes_.round(len).value_or(0);
    local->lock().lock();
    Block* block = local->enabled() && local->budget() >= size ? local->take(size) : nullptr;
    if (block != nullptr) {
      local->spend(block->size);
      local->list_live(*block);
    }
    local->lock().unlock();
    return block;
  }

  // Where free() sends a block: kept by this thread's cache (done), to the
  // shared path from the residency order or from no list, or to its home
  // through this thread's cache (route()).
  struct Freed {
    enum class Where : std::uint8_t { kept, ordered, unlisted, route } where;
    ThreadCache* local = nullptr;  // with `route`
  };
  // The free path: a block in a live list (any thread's) leaves it; then
  // this thread's cache keeps it if it can without sending another block
  // elsewhere (its lock only; another's too for a cross-thread free).
  Freed keep(Block& block) noexcept {
    ThreadCache* listed = block.listed_in.load(std::memory_order_acquire);
    if (listed == nullptr) return {Freed::Where::ordered};
    ThreadCache* local = find_thread_cache(*this, id_);
    if (listed != local) {
      listed->lock().lock();
      const bool still = block.listed_in.load(std::memory_order_relaxed) == listed;
      if (still) listed->unlist(block);
      listed->lock().unlock();
      // Moved to the residency order meanwhile (the device started wiring).
      if (!still) return {Freed::Where::ordered};
      if (local == nullptr) return {Freed::Where::unlisted};
      local->lock().lock();
    } else {
      local->lock().lock();
      if (block.listed_in.load(std::memory_order_relaxed) != local) {
        local->lock().unlock();
        return {Freed::Where::ordered};
      }
      local->unlist(block);
    }
    const bool kept = local->enabled() && local->keep(block);
    local->lock().unlock();
    if (kept) [[likely]] return {Freed::Where::kept};
    return {Freed::Where::route, local};
  }

  // Whether a block's home is one of the tier's arenas (else the shared cache).
  static bool is_home_of(const Block& block) {
    return block.reservation != nullptr && block.reservation->home != nullptr;
  }

  // Under the Allocator's lock from here on.

  // While one is alive, the thread caches the tier locked (to read or move
  // their budgets and blocks) stay locked: no hit or free of theirs is in
  // flight, so what was read stays true. Nested holds release at the
  // outermost's end.
  class Hold {
   public:
    explicit Hold(const ThreadTier& tier) : tier_(tier) { ++tier_.holds_; }
    ~Hold() {
      if (--tier_.holds_ == 0) tier_.release_locked();
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    const ThreadTier& tier_;
  };

  // A thread's new cache joins, with a share of the cache limit; at the
  // thread's exit its blocks go home and its arena waits for the next
  // thread. Called by the registry, which holds its lock; they take the
  // Allocator's lock themselves.
  virtual void attach(ThreadCache& local) = 0;
  virtual void detach(ThreadCache& local) noexcept = 0;

  // The shared path of a request of class `size`: `local` (this thread's
  // cache, or null) if it serves that size, locked until the Hold ends and
  // its budget handed back (the request is counted anew); else null.
  virtual ThreadCache* serving(ThreadCache* local, std::size_t size) noexcept = 0;
  // What `local` holds of class `size` (its stacks, then its arena), or null.
  Block* take_from(ThreadCache& local, std::size_t size) noexcept { return local.take(size); }
  // Where a miss of `local` takes new memory: its arena, or null (the shared cache).
  BlockCache* arena_of(ThreadCache& local) noexcept { return local.arena(); }
  // The block `local` handed out joins its live list, and `local` is
  // granted budget for what it holds: a fair part of `room` (bytes the peaks
  // and the limit leave). Returns the bytes granted, now handed out.
  virtual std::size_t grant(ThreadCache& local, Block& block, std::size_t room) noexcept = 0;
  // A cached block of `size` from an exited thread's arena, or, while thread
  // caches do not serve, from any thread's; null if none holds one.
  virtual Block* take_cached(std::size_t size, Stream stream, std::size_t headroom) = 0;

  // A free `local` could not keep alone: the block, or the one that made
  // room for it, goes home. False (nothing changed) if `local` does not
  // serve: then the Allocator frees it as any other.
  virtual bool route(Block& block, ThreadCache& local) noexcept = 0;
  // A cached block (not live) whose home is one of the tier's arenas
  // (is_home_of) joins it, bringing `budget` bytes of handed-out count: the
  // arena's thread cache keeps them as budget while it serves, else they are
  // handed back.
  virtual void put_cached(Block& block, std::size_t budget) noexcept = 0;

  // Budgets taken back, this thread's first, until at least `bytes` came
  // back (all of them for SIZE_MAX).
  virtual void take_budgets(std::size_t bytes) noexcept = 0;
  void take_all_budgets() noexcept { take_budgets(static_cast<std::size_t>(-1)); }
  // Every budget taken back and every stack and slot sent home, so that
  // every cached block is in an arena or the shared cache.
  virtual void flush_all() noexcept = 0;
  // Thread caches serve only while nothing is traced or wired: when they
  // stop they are flushed and their live blocks join the residency order.
  virtual void set_serving(bool serving) = 0;

  // Bytes every thread cache and arena of the tier holds (all cache), and
  // the budgets among them (handed out, not live).
  struct Totals {
    std::size_t cached = 0;
    std::size_t budgets = 0;
  };
  virtual Totals totals() const = 0;
  // An upper bound of what the tier may hold, read without taking a lock.
  virtual std::size_t holdings_bound() const = 0;

  // The part of the cache limit the tier takes from the shared cache: the
  // threads' shares, and what exited threads' arenas hold.
  virtual std::size_t cache_limit_share() const = 0;
  // The shares granted again within a new limit; caches trimmed to them
  // (after flush_all()).
  virtual void set_cache_limit(std::size_t bytes) noexcept = 0;
  // Releases `bytes` of least recently freed memory, exited threads' arenas
  // first; `bytes` falls by what went. 0, or the errno of a refusal.
  virtual int release(std::size_t& bytes) noexcept = 0;
  virtual int release_all() noexcept = 0;
  virtual void unwire_newest(std::size_t target) noexcept = 0;
  virtual Reserved reserved() const = 0;
  // At the device's end (after flush_all(), nothing live): every thread
  // cache detached, every arena back to the system.
  virtual void close() noexcept = 0;

 protected:
  // The thread caches locked under Hold guards, unlocked.
  virtual void release_locked() const noexcept = 0;

  const SizeClasses classes_;
  const std::size_t max_block_;
  const std::uint64_t id_;  // this tier's key in the registry
  std::size_t attached_ = 0;

 private:
  mutable std::size_t holds_ = 0;
};

// The tier for `backend`: thread caches where it suits them (no stream
// order, a page size the bins fit), else one that serves nothing. The
// Allocator's lock is `shared_lock`; the arenas it makes report to
// `cache_owner`.
std::unique_ptr<ThreadTier> make_thread_tier(Backend& backend, SizeClasses classes, ThreadTierOwner& owner,
                                             CacheOwner& cache_owner, Residency& residency, std::mutex& shared_lock,
                                             std::size_t cache_limit);

}  // namespace nuvec::detail
