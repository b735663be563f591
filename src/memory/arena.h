// Arena: blocks carved from address-space reservations, one contiguous
// address-ordered heap per reservation (docs/allocator-policy.md, "The
// arena"). Each reservation is cut into extents — live, cached or holes —
// that tile it in address order. Taking splits an extent (the remainder
// stays what it was); freeing merges a block with the cached extents beside
// it; releasing turns a cached extent into a hole, merged with the holes
// beside it (or only its high part, when a trim needs less). Blocks below a
// page and blocks of a page and more live in reservations of their own (two
// kinds), so larger blocks stay page-aligned.
//
// Only bookkeeping: the Allocator makes the system calls and keeps the
// statistics. Every container is intrusive and spare Block objects are
// pooled, so the steady state (taking from and returning to the cache)
// allocates nothing. Not thread-safe: the Allocator's lock guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>

#include "memory/backend.h"
#include "memory/block.h"
#include "memory/free_index.h"
#include "memory/size_classes.h"

namespace nuvec::detail {

using ExtentList = boost::intrusive::list<Block, boost::intrusive::member_hook<Block, ListHook, &Block::address_hook>,
                                          boost::intrusive::constant_time_size<false>>;

// Blocks below a page, or of a page and more.
enum class ArenaKind : std::uint8_t { small, pages };

struct Reservation {
  std::byte* base = nullptr;
  std::size_t size = 0;
  ArenaKind kind = ArenaKind::pages;
  std::uint64_t seq = 0;  // order of reservation: ties among holes go to the older
  // The cache whose arena this is, when blocks must find their way back to
  // it from elsewhere (a thread's arena: memory/thread_cache.h); else null.
  const void* home = nullptr;
  ExtentList extents;     // tiles [base, base + size) in address order

  ~Reservation() { extents.clear(); }
  // Nothing in it is live or cached: one hole.
  bool unused() const {
    return !extents.empty() && &extents.front() == &extents.back() && extents.front().state == ExtentState::hole;
  }
};

class Arena {
 public:
  // `home`: what each reservation's `home` says (null: nothing).
  explicit Arena(SizeClasses classes, const void* home = nullptr);
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();

  ArenaKind kind_of(std::size_t size) const { return size < classes_.page ? ArenaKind::small : ArenaKind::pages; }

  // Makes sure a take on `stream` needs no allocation: free indexes for the
  // stream and `spares` spare Block objects. Raises std::bad_alloc.
  void prepare(Stream stream, std::size_t spares) {
    if (spare_count_ < spares || find_index(ArenaKind::pages, stream) == nullptr) prepare_slow(stream, spares);
  }

  // --- Finding what serves a request (nothing changes) ---
  // A wired cached block (they are never split or merged) by bounded best
  // fit: of at least `size` bytes, below min(2·size, size + 2·page) and at
  // most `headroom`; the smallest, the most recently freed among equals.
  Block* find_wired(std::size_t size, std::size_t headroom) const {
    return wired_.empty() ? nullptr : find_wired_slow(size, headroom);
  }
  // The best-fitting unwired cached extent of `size`'s kind: on `stream`
  // if one fits, else on any other stream (smallest, then most recently
  // indexed, then lowest stream).
  Block* find_cached(std::size_t size, Stream stream) const {
    if (const FreeIndex* same = find_index(kind_of(size), stream)) {
      if (Block* extent = same->best_fit(size)) return extent;
    }
    return indexes_.size() > 1 ? find_cached_elsewhere(size, stream) : nullptr;
  }
  // The best-fitting hole of `size`'s kind: smallest, then in the oldest
  // reservation, then lowest address. nullptr if none fits.
  Block* find_hole(std::size_t size) const;

  // --- Taking ---
  // The live block for the low `size` bytes of `extent` (a cached extent or
  // a hole): the extent itself when it fits exactly, else a spare Block
  // describing that part. Nothing is linked yet: either commit() or
  // discard() it. Needs a spare (prepare()).
  Block& carve(Block& extent, std::size_t size);
  // Makes the carved block live: the extent shrinks to its remainder (which
  // stays cached or a hole, keeping its place in the release order) or, if
  // the block is the extent, leaves its container.
  void commit(Block& extent, Block& live);
  void discard(Block& extent, Block& live);
  // Makes a wired cached block (from find_wired) live.
  void take_wired(Block& block);

  // A new reservation: one hole over all of it; returns the hole. Needs a
  // spare (prepare()).
  Block& add_reservation(void* base, std::size_t size, ArenaKind kind);
  // Forgets a reservation that is unused(); the caller unreserves it.
  void remove_reservation(Reservation& reservation);
  const std::vector<std::unique_ptr<Reservation>>& reservations() const { return reservations_; }

  // --- Freeing ---
  // A live block becomes cached, the most recently freed. Unwired, it merges
  // with the unwired cached extents of its stream directly beside it (the
  // merged extent is freed now); wired, it stays alone. May return `block`'s
  // neighbours to the spares; `block` itself stays the (merged) extent.
  void put(Block& block);

  // --- Releasing ---
  // The least recently freed cached extent, or nullptr.
  Block* oldest() const { return lru_.empty() ? nullptr : const_cast<Block*>(&lru_.front()); }
  // The whole pages that go back to the system when the high `bytes` of
  // cached `extent` (all of it by default) become a hole: their own, and
  // pages they share only with holes beside them (below a page extents
  // share pages; a part shares its low page with the rest, which stays
  // cached). Possibly empty.
  std::pair<void*, std::size_t> decommit_range(const Block& extent, std::size_t bytes) const;
  std::pair<void*, std::size_t> decommit_range(const Block& extent) const {
    return decommit_range(extent, extent.size);
  }
  // What a release may cut an unwired cached extent to: its kind's step.
  std::size_t step_of(const Block& extent) const {
    return extent.reservation->kind == ArenaKind::small ? classes_.small_step : classes_.page;
  }
  // A spare Block for cut_high(), made now if need be; false if there is no
  // memory for it (the caller releases the whole extent instead).
  bool prepare_cut() noexcept;
  // The high `bytes` of unwired cached `extent` (a multiple of its step,
  // less than its size; decommitted by the caller) leave the cache and
  // become a hole, merged with a hole after them. The rest stays cached
  // where it is, keeps its place in the release order and enters the index
  // again, like what is left of a split. Needs prepare_cut().
  void cut_high(Block& extent, std::size_t bytes);
  // A cached extent leaves the cache (its index, the release order,
  // `bytes()`), then — once the caller has settled its wiring — becomes a
  // hole, merged with the holes beside it.
  void evict(Block& extent);
  void make_hole(Block& evicted);
  // A cached extent that was wired is not any more: it joins the free index
  // where it is, keeping its place in the release order; it merges with its
  // neighbours when one of them is freed next. Does not touch the release
  // order, so it may be called from for_each_newest_first().
  void unwired(Block& extent);

  // Cached bytes.
  std::size_t bytes() const { return bytes_; }
  const std::size_t& bytes_counter() const { return bytes_; }  // for BlockCache::bytes()
  bool empty() const { return lru_.empty(); }

  // Cached extents, most recently freed first. `f` may only call unwired().
  template <class F>
  void for_each_newest_first(F&& f) {
    for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) f(*it);
  }

 private:
  using LruList = boost::intrusive::list<Block, boost::intrusive::member_hook<Block, ListHook, &Block::lru_hook>>;
  // Wired cached blocks.
  using WiredSet = boost::intrusive::multiset<Block, boost::intrusive::member_hook<Block, SetHook, &Block::large_hook>,
                                              boost::intrusive::compare<BySizeThenRecentlyFreed>>;
  struct HoleOrder {  // smallest, then oldest reservation, then lowest address
    bool operator()(const Block& a, const Block& b) const {
      if (a.size != b.size) return a.size < b.size;
      if (a.reservation->seq != b.reservation->seq) return a.reservation->seq < b.reservation->seq;
      return a.address < b.address;
    }
  };
  using HoleSet = boost::intrusive::set<Block, boost::intrusive::member_hook<Block, SetHook, &Block::large_hook>,
                                        boost::intrusive::compare<HoleOrder>>;
  struct StreamIndexes {
    Stream stream;
    std::unique_ptr<FreeIndex> small;
    std::unique_ptr<FreeIndex> pages;
    FreeIndex& of(ArenaKind kind) const { return kind == ArenaKind::small ? *small : *pages; }
  };

  void prepare_slow(Stream stream, std::size_t spares);
  Block* find_wired_slow(std::size_t size, std::size_t headroom) const;
  Block* find_cached_elsewhere(std::size_t size, Stream stream) const;
  FreeIndex* find_index(ArenaKind kind, Stream stream) const {
    if (!indexes_.empty() && indexes_.front().stream == stream) return &indexes_.front().of(kind);  // usually
    for (const StreamIndexes& s : indexes_) {
      if (s.stream == stream) return &s.of(kind);
    }
    return nullptr;
  }
  FreeIndex& index_of(const Block& extent) const { return *find_index(extent.reservation->kind, extent.stream); }
  HoleSet& holes_of(ArenaKind kind) { return holes_[static_cast<int>(kind)]; }
  const HoleSet& holes_of(ArenaKind kind) const { return holes_[static_cast<int>(kind)]; }
  // Beside `extent` in its reservation, or nullptr.
  static Block* before(Block& extent);
  static Block* after(Block& extent);
  // Same stream, cached, not wired: `a` and `b` may merge.
  static bool mergeable(const Block& a, const Block& b) {
    return a.state == ExtentState::cached && !a.wired && !b.wired && a.stream == b.stream;
  }
  // Spare Blocks form a stack linked through bin_next (no spare is indexed).
  Block& spare() {
    Block& block = *spares_;
    spares_ = block.bin_next;
    --spare_count_;
    return block;
  }
  void recycle(Block& block) {
    block.bin_next = spares_;
    spares_ = &block;
    ++spare_count_;
  }
  void refill();

  SizeClasses classes_;
  const void* home_;
  std::vector<std::unique_ptr<Reservation>> reservations_;
  std::vector<StreamIndexes> indexes_;  // one per stream seen
  WiredSet wired_;
  HoleSet holes_[2];  // by kind
  LruList lru_;  // every cached extent, least recently freed first
  std::size_t bytes_ = 0;
  std::uint64_t clock_ = 0;  // stamps freed_at and binned_at
  std::uint64_t next_seq_ = 0;
  Block* spares_ = nullptr;
  std::size_t spare_count_ = 0;
  std::vector<std::unique_ptr<Block[]>> slabs_;  // every Block the arena made
};

}  // namespace nuvec::detail
