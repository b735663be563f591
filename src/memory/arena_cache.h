// ArenaCache: the BlockCache of a backend with reservations. Blocks are
// carved from address space it reserves and owns (ReservationSource), kept
// as extents of an Arena (memory/arena.h): a hit splits a cached extent, a
// free merges neighbours, a release decommits pages and leaves a hole, and a
// miss takes a hole — address space never used or decommitted — before a
// new reservation is made. The policy is docs/allocator-policy.md, "The
// arena".
#pragma once

#include <new>

#include "memory/arena.h"
#include "memory/block_cache.h"
#include "memory/size_classes.h"

namespace nuvec::detail {

class ThreadCache;

class ArenaCache final : public BlockCache {
 public:
  // `home_of_its_blocks`: each block tells which ArenaCache it came from
  // (home_of()), for a thread's arena (memory/thread_cache.h).
  ArenaCache(CacheOwner& owner, Residency& residency, StreamOrder* streams, ReservationSource& source,
             SizeClasses classes, bool home_of_its_blocks = false);

  // The ArenaCache a block was carved from, if it was made to tell (else null).
  static ArenaCache* home_of(const Block& block) {
    return block.reservation == nullptr ? nullptr
                                        : static_cast<ArenaCache*>(const_cast<void*>(block.reservation->home));
  }
  // A thread's arena: the thread cache that uses it now; null while no
  // thread does (its thread exited). Written under the Allocator's lock and
  // that thread cache's.
  ThreadCache* holder = nullptr;

  // A thread's hit path, under that thread cache's lock only: the best-fitting
  // unwired cached extent of stream 0, split, with no wiring, no trace event
  // and no call of the owner; null if none fits (or spare bookkeeping could
  // not be made: the caller's slow path raises that).
  Block* take_unwired(std::size_t size) noexcept {
    try {
      arena_.prepare(0, /*spares=*/2);
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
    Block* extent = arena_.find_cached(size, 0);
    if (extent == nullptr) return nullptr;
    Block& block = arena_.carve(*extent, size);
    arena_.commit(*extent, block);
    return &block;
  }

  Block* take_cached(std::size_t size, Stream stream, std::size_t headroom) override {
    prepare(size, stream);
    // A wired cached block (never split or merged): bounded best fit, as for
    // whole blocks, so that its lock serves again.
    if (Block* block = arena_.find_wired(size, headroom)) {
      arena_.take_wired(*block);
      hand_over(*block, stream);
      return block;
    }
    // The best-fitting cached extent, split.
    if (Block* extent = arena_.find_cached(size, stream)) return &take(*extent, size, stream);
    return nullptr;
  }
  Block& take_new(std::size_t len, std::size_t size, Stream stream) override;
  void put(Block& block) noexcept override { arena_.put(block); }  // may merge: `block` is then the merged extent
  Block* oldest() const override { return arena_.oldest(); }
  // An unwired extent larger than `wanted` (rounded up to its step) gives
  // only its high part; a wired one (never split) goes whole.
  int release(Block& cached, std::size_t wanted) noexcept override;
  void unwire_newest(std::size_t target) noexcept override;
  void release_everything() noexcept override;
  Reserved reserved() const override;
  std::optional<Committed> committed() const override { return source_.committed(); }
  void reset_committed_peak() noexcept override { source_.reset_committed_peak(); }

 private:
  // A take needs at most two Block objects, and a free index for `stream`.
  void prepare(std::size_t size, Stream stream) {
    try {
      arena_.prepare(stream, /*spares=*/2);
    } catch (const std::bad_alloc&) {
      owner_.refuse_bookkeeping(size, size);
    }
  }
  // The low `size` bytes of `extent` (cached, or a hole) become a block on
  // `stream`, wired if it fits; raises IoError if wiring fails (nothing
  // changes then).
  Block& take(Block& extent, std::size_t size, Stream stream);
  // A hole of at least `size` bytes from a new reservation; if the system
  // refuses, the cache is released (and unused reservations returned) and
  // the holes and the system are tried once more. `fresh` tells whether the
  // hole is a new reservation's. Raises OutOfMemory.
  Block& reserve(std::size_t len, std::size_t size, bool& fresh);
  void unreserve_unused() noexcept;
  // Commits the whole pages the low `size` bytes of `hole` cover: 0, or the
  // source's errno.
  int commit_pages(const Block& hole, std::size_t size) noexcept;
  // The whole extent becomes a hole; or only its high `bytes`.
  int release_whole(Block& extent) noexcept;
  int release_high(Block& extent, std::size_t bytes) noexcept;
  // Returns `reservation` (one made for a take that did not use it, or
  // null) to the system if nothing is in it.
  void return_if_unused(Reservation* reservation) noexcept;

  ReservationSource& source_;
  const SizeClasses classes_;
  Arena arena_;
};

}  // namespace nuvec::detail
