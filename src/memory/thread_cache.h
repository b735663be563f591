// ThreadCache: one thread's cache for one device, in front of the device's
// shared state, so that a steady-state hit or free takes no shared lock. It
// holds, per size class up to the device's thread-cache limit, a short stack
// of freed blocks; behind those, on a backend with reservations, an arena of
// its own (an ArenaCache whose reservations only this cache carves from), so
// that sizes the stacks miss are split and merged there instead of in the
// device's one arena. It is a data structure only: the device's ThreadTier
// (memory/thread_tier.h) decides what goes in and out, and the registry
// (memory/thread_registry.h) finds this thread's cache.
//
// What it holds is `cache`. Part of that, its `budget`, is counted by the
// device as handed out: bytes within the device's peaks and memory limit
// that this thread may make live without asking. A hit spends budget, a free
// into this cache earns it back, so the device's count of handed-out bytes
// (live bytes plus every budget) stays put; docs/allocator-policy.md,
// "Thread caches", says why every statistic stays exact.
//
// Its own lock is taken by its thread on every hit and free (uncontended, a
// line that stays in that core's cache), by a thread freeing a buffer whose
// block came from this cache's arena, and by the tier, under the device's
// shared lock, to take a snapshot, to take budget back or to route blocks.
// No path holds two thread caches' locks unless it holds the shared lock.
// Lock order: the registry's lock (thread start and exit, device end), the
// device's shared lock, then thread caches.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <boost/intrusive/list.hpp>

#include "memory/arena_cache.h"
#include "memory/block.h"
#include "memory/owner_lock.h"
#include "memory/size_classes.h"

namespace nuvec::detail {

class ThreadTier;

class ThreadCache {
 public:
  // Classes up to kBinMax have a bin each (a stack of up to kDepth blocks);
  // larger ones, up to kMaxBlock, share kSlots slots matched by exact size
  // (a transformer asks for a few large sizes again and again; random large
  // sizes rarely recur): a free takes an empty slot, or else the slot filled
  // longest ago, whose block goes to the shared cache.
  static constexpr std::size_t kBinMax = std::size_t{256} << 10;
  static constexpr std::size_t kMaxBlock = std::size_t{64} << 20;
  static constexpr std::size_t kDepth = 8;
  static constexpr std::size_t kSlots = 16;
  // The share of the cache limit each thread cache is granted (while the
  // shares stay within half of the limit): room for kShareBlocks of its
  // largest blocks, and at least kMinCapacity.
  static constexpr std::size_t kMinCapacity = std::size_t{2} << 20;
  static constexpr std::size_t kShareBlocks = 16;
  static constexpr std::size_t capacity_for(std::size_t max_block) {
    return kShareBlocks * max_block > kMinCapacity ? kShareBlocks * max_block : kMinCapacity;
  }

  ThreadCache(const SizeClasses& classes, std::uint64_t owner_id) : classes_(classes), owner_id_(owner_id) {}
  // Made ready for another thread and device (it is empty and detached).
  void reuse(const SizeClasses& classes, std::uint64_t owner_id) noexcept {
    classes_ = classes;
    owner_id_ = owner_id;
    capacity_ = 0;
    budget_ = 0;
    enabled_ = true;
    next_slot_ = 0;
  }
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;
  ~ThreadCache() { live_.clear(); }

  // The hit path (lock held): a block of class `size` from its stack or
  // slot, else carved from this cache's arena; null if neither holds one.
  // The caller spends the budget.
  Block* take(std::size_t size) noexcept {
    if (Block* block = take_kept(size)) return block;
    return arena_ != nullptr ? arena_->take_unwired(size) : nullptr;
  }
  // A cached block of class `size` from its stack or slot (lock held), or null.
  Block* take_kept(std::size_t size) noexcept {
    if (size <= kBinMax) [[likely]] {
      Bin& bin = bins_[classes_.index(size)];
      if (bin.count == 0) return nullptr;
      bytes_ -= size;
      return bin.blocks[--bin.count];
    }
    for (std::size_t i = 0; i < kSlots; ++i) {
      if (slots_[i] != nullptr && slots_[i]->size == size) {
        Block* block = slots_[i];
        slots_[i] = nullptr;
        bytes_ -= size;
        return block;
      }
    }
    return nullptr;
  }
  // A freed block, kept here if it can be within the capacity and without
  // sending any block elsewhere (lock held): in its class's stack or a slot
  // (a full set of slots gives its oldest block to this cache's arena if it
  // came from there), else in this cache's arena if it came from there.
  // Earns its size in budget. False, nothing changed, when it would have to
  // go elsewhere or pass the capacity.
  bool keep(Block& block) noexcept {
    if (holdings() + block.size > capacity_) return false;
    if (block.size <= kBinMax) [[likely]] {
      Bin& bin = bins_[classes_.index(block.size)];
      if (bin.count != kDepth && bytes_ + block.size <= stack_capacity()) {
        bin.blocks[bin.count++] = &block;
        bytes_ += block.size;
        return earn(block.size);
      }
    } else if (Block** slot = slot_for(block); slot != nullptr) {
      if (*slot == nullptr || is_mine(**slot)) {
        if (Block* evicted = std::exchange(*slot, &block)) {
          bytes_ -= evicted->size;
          arena_->put(*evicted);
        }
        bytes_ += block.size;
        next_slot_ = (next_slot_ + 1) % kSlots;
        return earn(block.size);
      }
    }
    if (!is_mine(block)) return false;
    const std::size_t size = block.size;  // put() may merge it with its neighbours
    arena_->put(block);
    return earn(size);
  }
  // As keep(), but past the capacity a block of this cache's arena goes
  // there all the same (the caller then trims the arena), and a block that
  // would go elsewhere is returned instead (the shared lock and this lock
  // held): null (kept), `block` itself (not kept), or the block of the
  // oldest slot, which made room for it. The caller then moves the budget
  // that no longer fits the holdings (excess_budget).
  Block* put(Block& block) noexcept {
    if (keep(block)) return nullptr;
    if (is_mine(block)) {
      const std::size_t size = block.size;
      arena_->put(block);
      earn(size);
      return nullptr;
    }
    Block** slot = block.size > kBinMax ? slot_for(block) : nullptr;
    if (slot == nullptr || *slot == nullptr) return &block;
    Block* evicted = std::exchange(*slot, &block);
    bytes_ = bytes_ + block.size - evicted->size;
    next_slot_ = (next_slot_ + 1) % kSlots;
    earn(block.size);
    return evicted;
  }
  // Takes every block out of the stacks and slots (lock held), to be sent
  // to its home; `each(Block&)`. The arena keeps what it holds.
  template <class Each>
  void drain(Each each) noexcept {
    for (Bin& bin : bins_) {
      while (bin.count != 0) {
        Block* block = bin.blocks[--bin.count];
        bytes_ -= block->size;
        each(*block);
      }
    }
    for (Block*& slot : slots_) {
      if (slot == nullptr) continue;
      bytes_ -= slot->size;
      each(*std::exchange(slot, nullptr));
    }
  }

  // Live blocks handed out while thread caches served (lock held): they
  // wait here, not in the device's residency order, so that a hit or free
  // needs no shared lock; when the device starts wiring it moves them all
  // into its order (take_live).
  void list_live(Block& block) noexcept {
    live_.push_back(block);
    block.listed_in.store(this, std::memory_order_relaxed);
  }
  void unlist(Block& block) noexcept {
    live_.erase(live_.iterator_to(block));
    block.listed_in.store(nullptr, std::memory_order_relaxed);
  }
  template <class Each>
  void take_live(Each each) noexcept {
    while (!live_.empty()) {
      auto& block = static_cast<Block&>(live_.front());
      unlist(block);
      each(block);
    }
  }

  OwnerLock& lock() noexcept { return lock_; }
  // Bytes held: in stacks and slots, and in all (lock held, or the shared
  // lock with the owner's taken).
  std::size_t bytes() const noexcept { return bytes_; }
  std::size_t holdings() const noexcept { return bytes_ + (arena_ != nullptr ? arena_->bytes() : 0); }
  // Of the holdings, bytes the device counts as handed out (at most the
  // holdings): what a hit may take without the shared lock.
  std::size_t budget() const noexcept { return budget_; }
  void spend(std::size_t bytes) noexcept { budget_ -= bytes; }
  // Budget taken back by the device, or granted (shared lock and this lock).
  std::size_t take_budget() noexcept { return std::exchange(budget_, 0); }
  void grant_budget(std::size_t bytes) noexcept { budget_ += bytes; }
  // Budget past the holdings (after blocks left), taken back.
  std::size_t excess_budget() noexcept {
    const std::size_t held = holdings();
    if (budget_ <= held) return 0;
    const std::size_t excess = budget_ - held;
    budget_ = held;
    return excess;
  }
  // This thread's arena, or null (a backend without reservations, or none
  // could be made). Set and taken under both locks.
  ArenaCache* arena() const noexcept { return arena_.get(); }
  void set_arena(std::unique_ptr<ArenaCache> arena) noexcept {
    arena_ = std::move(arena);
    if (arena_ != nullptr) arena_->holder = this;
  }
  std::unique_ptr<ArenaCache> take_arena() noexcept {
    if (arena_ != nullptr) arena_->holder = nullptr;
    return std::move(arena_);
  }
  bool is_mine(const Block& block) const noexcept {
    return arena_ != nullptr && ArenaCache::home_of(block) == arena_.get();
  }
  // What it may hold: granted by the tier from the cache limit (0:
  // it serves nothing and keeps nothing). Written under both locks.
  std::size_t capacity() const noexcept { return capacity_; }
  void set_capacity(std::size_t bytes) noexcept { capacity_ = bytes; }
  // Serving at all: false while the device traces or wires (written under
  // both locks).
  bool enabled() const noexcept { return enabled_; }
  void set_enabled(bool on) noexcept { enabled_ = on; }

  std::uint64_t owner_id() const noexcept { return owner_id_; }
  // The device it belongs to; null once that device is gone (written under
  // the registry's lock).
  ThreadTier* owner = nullptr;
  // Its lock is held by that device's tier under the shared lock (ThreadCaches::collect).
  bool collected = false;

 private:
  struct Bin {
    std::uint32_t count = 0;
    std::array<Block*, kDepth> blocks{};
  };
  // Bins for classes up to kBinMax, for pages of 4 KiB or more (the
  // tier bins only what fits: kBinMax / page + page / small_step).
  static constexpr std::size_t kBins = kBinMax / 4096 + 4096 / 256;

  // Stacks and slots keep blocks of exact sizes only: with an arena behind
  // them they take a quarter of the capacity, so that blocks of sizes that
  // do not come again go back to the arena, where they merge and serve any
  // size.
  std::size_t stack_capacity() const noexcept { return arena_ != nullptr ? capacity_ / 4 : capacity_; }
  bool earn(std::size_t bytes) noexcept {
    budget_ += bytes;
    return true;
  }
  // For a block above kBinMax: an empty slot, else the one filled longest
  // ago, if the block fits the stacks' and slots' capacity in its place;
  // else null.
  Block** slot_for(const Block& block) noexcept {
    for (std::size_t i = 0; i < kSlots; ++i) {
      if (slots_[i] == nullptr) {
        next_slot_ = i;
        break;
      }
    }
    Block* const old = slots_[next_slot_];
    const std::size_t after = bytes_ - (old != nullptr ? old->size : 0) + block.size;
    return after <= stack_capacity() ? &slots_[next_slot_] : nullptr;
  }

  OwnerLock lock_;
  SizeClasses classes_;
  std::uint64_t owner_id_;
  std::size_t bytes_ = 0;
  std::size_t budget_ = 0;
  std::unique_ptr<ArenaCache> arena_;
  std::size_t capacity_ = 0;
  bool enabled_ = true;
  std::size_t next_slot_ = 0;
  std::array<Block*, kSlots> slots_{};
  boost::intrusive::list<Resident, boost::intrusive::member_hook<Resident, ListHook, &Resident::order_hook>> live_;
  std::array<Bin, kBins> bins_{};
};

}  // namespace nuvec::detail
