// ThreadCaches: the ThreadTier of a device whose backend suits thread
// caches — every thread's ThreadCache that is attached, the arenas of
// threads that exited (a new thread takes one over; until then their memory
// serves under the Allocator's lock only), and each thread's share of the
// cache limit. Its methods are the tier's coordination, run under the
// Allocator's lock (attach and detach take it); the hit and free paths are
// ThreadTier's inline take() and keep().
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "memory/arena_cache.h"
#include "memory/thread_tier.h"

namespace nuvec::detail {

class ThreadCaches final : public ThreadTier {
 public:
  // `reservations`: where each thread's arena carves from (null: the
  // threads keep only stacks and slots).
  ThreadCaches(SizeClasses classes, std::size_t max_block, std::uint64_t id, ThreadTierOwner& owner,
               CacheOwner& cache_owner, Residency& residency, ReservationSource* reservations,
               std::mutex& shared_lock, std::size_t cache_limit);

  void attach(ThreadCache& local) override;
  void detach(ThreadCache& local) noexcept override;
  ThreadCache* serving(ThreadCache* local, std::size_t size) noexcept override;
  std::size_t grant(ThreadCache& local, Block& block, std::size_t room) noexcept override;
  Block* take_cached(std::size_t size, Stream stream, std::size_t headroom) override;
  bool route(Block& block, ThreadCache& local) noexcept override;
  void put_cached(Block& block, std::size_t budget) noexcept override;
  void take_budgets(std::size_t bytes) noexcept override;
  void flush_all() noexcept override;
  void set_serving(bool serving) override;
  Totals totals() const override;
  std::size_t holdings_bound() const override;
  std::size_t cache_limit_share() const override { return local_capacity_ + orphan_bytes(); }
  void set_cache_limit(std::size_t bytes) noexcept override;
  int release(std::size_t& bytes) noexcept override;
  int release_all() noexcept override;
  void unwire_newest(std::size_t target) noexcept override;
  Reserved reserved() const override;
  void close() noexcept override;

 private:
  // Under a Hold: takes one thread cache's lock, or every one's.
  void collect(ThreadCache& local) const noexcept;
  void collect_all() const noexcept;
  void release_locked() const noexcept override;

  // Its budget handed back (collected first); returns the bytes.
  std::size_t take_budget(ThreadCache& local) noexcept;
  // Its stacks and slots sent home, its budget taken first.
  void flush(ThreadCache& local) noexcept;
  // Its arena trimmed to its capacity, and budget past what it then holds
  // handed back.
  void trim(ThreadCache& local) noexcept;
  // Its share of the cache limit: the shares together stay within half of
  // the limit, past that a new thread gets none (and keeps nothing).
  void grant_capacity(ThreadCache& local) noexcept;
  std::size_t orphan_bytes() const;

  ThreadTierOwner& owner_;
  CacheOwner& cache_owner_;
  Residency& residency_;
  ReservationSource* const reservations_;
  std::mutex& shared_lock_;
  std::size_t cache_limit_;
  bool serving_ = true;
  std::vector<ThreadCache*> locals_;
  std::size_t local_capacity_ = 0;  // the part of cache_limit_ granted to them
  std::vector<std::unique_ptr<ArenaCache>> orphans_;
  mutable std::size_t collected_ = 0;  // thread caches locked by collect()
};

}  // namespace nuvec::detail
