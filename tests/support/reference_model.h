// A plain reference model of the allocator's policy (docs/allocator-policy.md):
// vectors and linear scans, no cleverness, so that it can be read against the
// document rule by rule. property_test.cc drives it beside a real device.
//
// Two cache policies, as the document has them: the arena (a backend that
// reserves address space: the CPU) and whole blocks (a backend that cannot:
// each block its own system allocation). Limits, peaks, mappings and
// residency are common. The model knows one stream (0), as the CPU.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "nuvec/mapped_file.h"
#include "nuvec/memory_stats.h"

namespace nuvec_test {

// The CPU size classes: 256-byte steps up to a page, whole pages beyond.
inline std::optional<std::size_t> model_allocation_size(std::size_t len, std::size_t page) {
  if (len == 0) return 0;
  const std::size_t step = len <= page ? 256 : page;
  if (len > std::numeric_limits<std::size_t>::max() - (step - 1)) return std::nullopt;
  return (len + step - 1) / step * step;
}

// What mapping `ranges` of a file of `file_size` bytes counts in `mapped`:
// each range widened to whole pages, overlapping or touching ones merged.
// Empty when a range is empty or reaches past the end of the file.
inline std::optional<std::size_t> model_ranges_size(std::uint64_t file_size,
                                                    std::span<const nuvec::FileRange> ranges,
                                                    std::size_t page) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pages;
  for (const nuvec::FileRange& r : ranges) {
    if (r.length == 0 || r.offset > file_size || r.length > file_size - r.offset) {
      return std::nullopt;
    }
    pages.emplace_back(r.offset / page * page, (r.offset + r.length + page - 1) / page * page);
  }
  std::sort(pages.begin(), pages.end());
  std::size_t total = 0;
  std::uint64_t begin = 0, end = 0;
  bool open = false;
  for (auto [b, e] : pages) {
    if (open && b <= end) {
      end = std::max(end, e);
      continue;
    }
    if (open) total += end - begin;
    begin = b;
    end = e;
    open = true;
  }
  if (open) total += end - begin;
  return total;
}

class ReferenceModel {
 public:
  enum class Policy {
    arena,   // blocks carved from reservations: split, merged, decommitted
    blocks,  // each block its own system allocation, reused whole
  };

  // Where the policy text leaves a choice, the reading the model takes (the
  // defaults are the device's).
  struct Readings {
    // "Releasing a wired block unwires it, after which waiting items are
    // promoted": after each release (true) or once after all the releases of
    // one operation (false). The results differ: first fit over a growing
    // budget is not first fit over the final one.
    bool promote_after_each_release = false;
    // "Promotion (after wired falls ...)": does lowering the wired limit,
    // which makes wired fall, end with a promotion? (It can wire a small
    // waiting item that now fits.)
    bool promote_after_lowering = false;
  };

  struct Config {
    Policy policy = Policy::arena;
    // The size of an arena reservation (the CPU backend's reservation_bytes).
    std::size_t reservation_bytes = std::size_t{64} << 30;
    Readings readings;
  };

  enum class Outcome {
    empty,
    refused,
    hit,     // from the cache: no system call
    miss,    // arena: from a hole (fresh or decommitted address space): no system call
    system,  // a system call: a new block, or (arena) a new reservation
    // (system_allocations counts both miss and system: every cache miss)
  };
  struct Allocation {
    Outcome outcome = Outcome::empty;
    std::size_t size = 0;        // the block's size
    std::uintptr_t address = 0;  // where the block is (hit, miss), or the device's (system)
  };

  ReferenceModel(std::size_t page, const nuvec::MemoryStats& initial, Config config)
      : page_(page),
        config_(config),
        memory_limit_(initial.memory_limit),
        cache_limit_(initial.cache_limit),
        wired_limit_(initial.wired_limit) {}

  nuvec::MemoryStats stats() const {
    nuvec::MemoryStats s;
    s.active = active_;
    s.peak = peak_;
    s.active_with_mapped = active_ + mapped_;
    s.peak_with_mapped = peak_with_mapped_;
    s.cache = cache_bytes_;
    s.memory_limit = memory_limit_;
    s.cache_limit = cache_limit_;
    s.system_allocations = system_allocations_;
    s.wired_limit = wired_limit_;
    s.wired = wired_;
    s.mapped = mapped_;
    s.wired_mapped = wired_mapped_;
    return s;
  }

  // Blocks policy: live buffers and cached blocks, each its own allocation.
  std::size_t block_count() const {
    std::size_t n = cache_.size();
    for (const Item& item : order_) n += item.mapping ? 0 : 1;
    return n;
  }
  // Arena policy: reservations and their bytes; bytes decommitted so far.
  std::size_t reservation_count() const { return reservations_.size(); }
  std::size_t reserved_bytes() const {
    std::size_t n = 0;
    for (const Reservation& r : reservations_) n += r.size;
    return n;
  }
  std::size_t decommitted_bytes() const { return decommitted_bytes_; }

  bool is_live(std::uintptr_t address) const {
    return std::any_of(order_.begin(), order_.end(),
                       [&](const Item& i) { return !i.mapping && i.key == address; });
  }

  // new_buffer(len); `address` is where the device put the buffer (the model
  // learns a new block's or reservation's address from it).
  Allocation allocate(std::size_t len, std::uintptr_t address) {
    const std::optional<std::size_t> size = model_allocation_size(len, page_);
    if (size && *size == 0) return {Outcome::empty, 0, 0};
    // 1. Limit.
    if (!size || *size > memory_limit_ - used()) return {Outcome::refused, size.value_or(0), 0};
    return config_.policy == Policy::arena ? allocate_in_arena(*size, address) : allocate_block(*size, address);
  }

  // A live buffer's destruction.
  void free(std::uintptr_t address) {
    auto it = find(address, false);
    const Item item = *it;
    order_.erase(it);
    active_ -= item.size;
    cache_bytes_ += item.size;
    if (config_.policy == Policy::arena) {
      free_in_arena(item);
    } else {
      cache_.push_back(Block{item.key, item.size, item.wired});  // stays wired
    }
    trim(cache_limit_);
  }

  // A mapping of `m` bytes; false when the memory limit refuses it.
  bool map(std::uintptr_t id, std::size_t m) {
    if (m > memory_limit_ - used()) return false;
    yield(m);
    mapped_ += m;
    create(Item{id, m, false, true});
    return true;
  }

  // The last owner of mapping `id` is gone.
  void unmap(std::uintptr_t id) {
    auto it = find(id, true);
    const Item item = *it;
    order_.erase(it);
    mapped_ -= item.size;
    if (item.wired) {
      wired_ -= item.size;
      wired_mapped_ -= item.size;
      promote();
    }
  }

  // Previous value, or empty for InvalidArgument.
  std::optional<std::size_t> set_memory_limit(std::size_t n) {
    if (n < used()) return std::nullopt;
    const std::size_t previous = std::exchange(memory_limit_, n);
    yield(0);
    return previous;
  }

  std::size_t set_cache_limit(std::size_t n) {
    const std::size_t previous = std::exchange(cache_limit_, n);
    trim(n);
    return previous;
  }

  // Previous value, or empty for InvalidArgument (above `lockable`).
  std::optional<std::size_t> set_wired_limit(std::size_t n, std::size_t lockable) {
    if (n > lockable) return std::nullopt;
    const std::size_t previous = std::exchange(wired_limit_, n);
    if (n >= previous) {
      promote();  // setting the same limit again also promotes
    } else {
      // Cached blocks first, most recently freed first; then live items,
      // newest first.
      if (config_.policy == Policy::arena) {
        unwire_cached_extents(n);
      } else {
        for (auto it = cache_.rbegin(); it != cache_.rend() && wired_ > n; ++it) {
          if (it->wired) {
            it->wired = false;
            wired_ -= it->size;
          }
        }
      }
      for (auto it = order_.rbegin(); it != order_.rend() && wired_ > n; ++it) {
        if (it->wired) unwire(*it);
      }
      if (config_.readings.promote_after_lowering) promote();
    }
    return previous;
  }

  void clear_cache() { trim(0); }

  void reset_peak() {
    peak_ = active_;
    peak_with_mapped_ = active_ + mapped_;
  }

 private:
  struct Item {  // a live buffer or mapping, in the residency order
    std::uintptr_t key;
    std::size_t size;
    bool wired;
    bool mapping;
  };
  struct Block {  // blocks policy: a cached block
    std::uintptr_t key;
    std::size_t size;
    bool wired;
  };

  enum class State { live, cached, hole };
  struct Extent {  // arena policy: a piece of a reservation
    std::uintptr_t address;
    std::size_t size;
    State state;
    bool wired = false;           // cached extents (a live one's wiring is its Item's)
    std::uint64_t freed_at = 0;   // cached: the release order
    std::uint64_t binned_at = 0;  // cached, unwired: ties among equal sizes
    std::uintptr_t end() const { return address + size; }
  };
  struct Reservation {
    bool small;  // holds blocks below a page
    std::uintptr_t base;
    std::size_t size;
    std::vector<Extent> extents;  // address order, tiling [base, base + size)
  };
  struct Place {  // an extent's position
    std::size_t reservation;
    std::size_t index;
  };

  std::size_t used() const { return active_ + mapped_; }

  std::vector<Item>::iterator find(std::uintptr_t key, bool mapping) {
    return std::find_if(order_.begin(), order_.end(),
                        [&](const Item& i) { return i.key == key && i.mapping == mapping; });
  }

  // Peaks, then the item joins the residency order, wired if it fits.
  void create(Item item) {
    peak_ = std::max(peak_, active_);
    peak_with_mapped_ = std::max(peak_with_mapped_, active_ + mapped_);
    if (!item.wired && wired_ + item.size <= wired_limit_) {
      item.wired = true;
      wired_ += item.size;
      if (item.mapping) wired_mapped_ += item.size;
    }
    order_.push_back(item);
  }

  void unwire(Item& item) {
    item.wired = false;
    wired_ -= item.size;
    if (item.mapping) wired_mapped_ -= item.size;
  }

  // Walks the order oldest first, wiring each waiting item that fits.
  void promote() {
    for (Item& item : order_) {
      if (!item.wired && wired_ + item.size <= wired_limit_) {
        item.wired = true;
        wired_ += item.size;
        if (item.mapping) wired_mapped_ += item.size;
      }
    }
  }

  // Releases least recently freed memory while the cache is over `limit`,
  // only the excess where a block can be cut.
  void trim(std::size_t limit) {
    bool unwired = false;
    while (cache_bytes_ > limit) unwired |= release_oldest(cache_bytes_ - limit);
    if (unwired && !config_.readings.promote_after_each_release) promote();
  }

  // The cache yields to `extra` new bytes under the memory limit (the
  // callers checked that used() + extra is within it).
  void yield(std::size_t extra) {
    bool unwired = false;
    while (cache_bytes_ > 0 && used() + cache_bytes_ + extra > memory_limit_) {
      unwired |= release_oldest(used() + cache_bytes_ + extra - memory_limit_);
    }
    if (unwired && !config_.readings.promote_after_each_release) promote();
  }

  // Returns `wanted` bytes of the least recently freed block to the system,
  // or all of it (see release_oldest_extent); true if it was wired.
  bool release_oldest(std::size_t wanted) {
    const bool wired = config_.policy == Policy::arena ? release_oldest_extent(wanted) : release_oldest_block();
    if (wired && config_.readings.promote_after_each_release) promote();
    return wired;
  }

  // --- Blocks policy ---

  Allocation allocate_block(std::size_t s, std::uintptr_t address) {
    // 2. Bounded best fit; among equal sizes the most recently freed.
    const std::size_t bound = std::min(2 * s, s + 2 * page_);
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < cache_.size(); ++i) {
      const std::size_t c = cache_[i].size;
      if (c < s || c >= bound || c > memory_limit_ - used()) continue;
      if (!best || c <= cache_[*best].size) best = i;  // later = freed more recently
    }
    if (best) {
      const Block block = cache_[*best];
      cache_.erase(cache_.begin() + static_cast<std::ptrdiff_t>(*best));
      cache_bytes_ -= block.size;
      active_ += block.size;
      create(Item{block.key, block.size, block.wired, false});
      return {Outcome::hit, block.size, block.key};
    }
    // 3. Miss: the cache yields, then the system.
    yield(s);
    ++system_allocations_;
    active_ += s;
    create(Item{address, s, false, false});
    return {Outcome::system, s, address};
  }

  bool release_oldest_block() {
    const Block block = cache_.front();
    cache_.erase(cache_.begin());
    cache_bytes_ -= block.size;
    if (!block.wired) return false;
    wired_ -= block.size;
    return true;
  }

  // --- Arena policy ---

  Extent& at(Place p) { return reservations_[p.reservation].extents[p.index]; }

  std::optional<Place> find_extent(std::uintptr_t address) {
    for (std::size_t r = 0; r < reservations_.size(); ++r) {
      auto& extents = reservations_[r].extents;
      for (std::size_t i = 0; i < extents.size(); ++i) {
        if (extents[i].address == address) return Place{r, i};
      }
    }
    return std::nullopt;
  }

  // The live block of the low `s` bytes of the extent at `p`; the rest stays
  // what it was (a cached remainder is indexed again: binned now).
  void take_low(Place p, std::size_t s) {
    Extent& e = at(p);
    if (e.size == s) {
      e.state = State::live;
      return;
    }
    const Extent live{e.address, s, State::live};
    e.address += s;
    e.size -= s;
    if (e.state == State::cached) e.binned_at = ++clock_;
    auto& extents = reservations_[p.reservation].extents;
    extents.insert(extents.begin() + static_cast<std::ptrdiff_t>(p.index), live);
  }

  Allocation allocate_in_arena(std::size_t s, std::uintptr_t address) {
    const std::size_t headroom = memory_limit_ - used();
    const bool small = s < page_;
    // 2a. A wired cached block: bounded best fit, taken whole (smallest, then
    // most recently freed), as in the blocks policy.
    const std::size_t bound = std::min(2 * s, s + 2 * page_);
    std::optional<Place> best;
    for_each_extent([&](Place p, const Extent& e) {
      if (e.state != State::cached || !e.wired || e.size < s || e.size >= bound || e.size > headroom) return;
      if (!best || e.size < at(*best).size || (e.size == at(*best).size && e.freed_at > at(*best).freed_at)) best = p;
    });
    if (best) {
      Extent& e = at(*best);
      e.state = State::live;
      e.wired = false;  // its Item holds the wiring now
      cache_bytes_ -= e.size;
      active_ += e.size;
      create(Item{e.address, e.size, true, false});
      return {Outcome::hit, e.size, e.address};
    }
    // 2b. Best fit among unwired cached extents of the request's kind: the
    // smallest, then the most recently indexed; split.
    for_each_extent([&](Place p, const Extent& e) {
      if (reservations_[p.reservation].small != small) return;
      if (e.state != State::cached || e.wired || e.size < s) return;
      if (!best || e.size < at(*best).size || (e.size == at(*best).size && e.binned_at > at(*best).binned_at)) {
        best = p;
      }
    });
    if (best) {
      const std::uintptr_t where = at(*best).address;
      take_low(*best, s);
      cache_bytes_ -= s;
      active_ += s;
      create(Item{where, s, false, false});
      return {Outcome::hit, s, where};
    }
    // 3. Miss: the cache yields; best fit among holes of the kind (smallest,
    // then oldest reservation, then lowest address); else a new reservation.
    yield(s);
    for_each_extent([&](Place p, const Extent& e) {
      if (reservations_[p.reservation].small != small || e.state != State::hole || e.size < s) return;
      if (!best || e.size < at(*best).size ||
          (e.size == at(*best).size && std::pair(p.reservation, e.address) <
                                           std::pair(best->reservation, at(*best).address))) {
        best = p;
      }
    });
    Outcome outcome = Outcome::miss;
    if (!best) {
      const std::size_t size = std::max(config_.reservation_bytes, (s + page_ - 1) / page_ * page_);
      reservations_.push_back(Reservation{small, address, size, {Extent{address, size, State::hole}}});
      best = Place{reservations_.size() - 1, 0};
      outcome = Outcome::system;
    }
    ++system_allocations_;  // a miss, whether a hole or a new reservation serves it
    const std::uintptr_t where = at(*best).address;
    take_low(*best, s);
    active_ += s;
    create(Item{where, s, false, false});
    return {outcome, s, where};
  }

  template <class F>
  void for_each_extent(F&& f) {
    for (std::size_t r = 0; r < reservations_.size(); ++r) {
      for (std::size_t i = 0; i < reservations_[r].extents.size(); ++i) f(Place{r, i}, reservations_[r].extents[i]);
    }
  }

  // A freed block: cached, the most recently freed. Wired, it stays alone;
  // otherwise it merges with unwired cached extents directly beside it.
  void free_in_arena(const Item& item) {
    const Place p = *find_extent(item.key);
    auto& extents = reservations_[p.reservation].extents;
    Extent& e = extents[p.index];
    e.state = State::cached;
    e.freed_at = ++clock_;
    e.wired = item.wired;
    if (e.wired) return;
    const auto mergeable = [](const Extent& x) { return x.state == State::cached && !x.wired; };
    std::size_t i = p.index;
    if (i + 1 < extents.size() && mergeable(extents[i + 1])) {
      extents[i].size += extents[i + 1].size;
      extents.erase(extents.begin() + static_cast<std::ptrdiff_t>(i + 1));
    }
    if (i > 0 && mergeable(extents[i - 1])) {
      extents[i].address = extents[i - 1].address;
      extents[i].size += extents[i - 1].size;
      extents.erase(extents.begin() + static_cast<std::ptrdiff_t>(i - 1));
      --i;
    }
    extents[i].binned_at = extents[i].freed_at;
  }

  // The least recently freed cached extent becomes a hole, merged with the
  // holes beside it; its pages, and pages it shared only with those holes,
  // are decommitted. True if it was wired. An unwired extent larger than
  // `wanted` (rounded up to its kind's step) gives only its high part.
  bool release_oldest_extent(std::size_t wanted) {
    std::optional<Place> oldest;
    for_each_extent([&](Place p, const Extent& e) {
      if (e.state == State::cached && (!oldest || e.freed_at < at(*oldest).freed_at)) oldest = p;
    });
    auto& extents = reservations_[oldest->reservation].extents;
    std::size_t i = oldest->index;
    Extent& e = extents[i];
    const std::size_t step = reservations_[oldest->reservation].small ? 256 : page_;
    if (!e.wired && wanted < e.size && (wanted + step - 1) / step * step < e.size) {
      cut_high(*oldest, (wanted + step - 1) / step * step);
      return false;
    }
    const bool wired = e.wired;
    cache_bytes_ -= e.size;
    if (wired) wired_ -= e.size;
    const std::uintptr_t hole_start = i > 0 && extents[i - 1].state == State::hole ? extents[i - 1].address : e.address;
    const std::uintptr_t hole_end =
        i + 1 < extents.size() && extents[i + 1].state == State::hole ? extents[i + 1].end() : e.end();
    const std::uintptr_t from = std::max(e.address / page_ * page_, (hole_start + page_ - 1) / page_ * page_);
    const std::uintptr_t to = std::min((e.end() + page_ - 1) / page_ * page_, hole_end / page_ * page_);
    if (from < to) decommitted_bytes_ += to - from;
    e = Extent{e.address, e.size, State::hole};
    if (i + 1 < extents.size() && extents[i + 1].state == State::hole) {
      extents[i].size += extents[i + 1].size;
      extents.erase(extents.begin() + static_cast<std::ptrdiff_t>(i + 1));
    }
    if (i > 0 && extents[i - 1].state == State::hole) {
      extents[i - 1].size += extents[i].size;
      extents.erase(extents.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return wired;
  }

  // The high `bytes` of the cached extent at `p` become a hole (merged with
  // a hole after them); the rest stays cached, indexed again now. The pages
  // they alone cover, and pages shared only with that hole, are decommitted.
  void cut_high(Place p, std::size_t bytes) {
    auto& extents = reservations_[p.reservation].extents;
    const std::size_t i = p.index;
    Extent& e = extents[i];
    const std::uintptr_t cut = e.end() - bytes;
    const bool hole_after = i + 1 < extents.size() && extents[i + 1].state == State::hole;
    const std::uintptr_t hole_end = hole_after ? extents[i + 1].end() : e.end();
    const std::uintptr_t from = (cut + page_ - 1) / page_ * page_;
    const std::uintptr_t to = std::min((e.end() + page_ - 1) / page_ * page_, hole_end / page_ * page_);
    if (from < to) decommitted_bytes_ += to - from;
    cache_bytes_ -= bytes;
    e.size -= bytes;
    e.binned_at = ++clock_;
    if (hole_after) {
      extents[i + 1].address = cut;
      extents[i + 1].size += bytes;
    } else {
      extents.insert(extents.begin() + static_cast<std::ptrdiff_t>(i + 1), Extent{cut, bytes, State::hole});
    }
  }

  // Lowering the wired limit: cached extents give up their lock first, most
  // recently freed first; each becomes an ordinary cached extent where it is
  // (indexed now, not merged).
  void unwire_cached_extents(std::size_t n) {
    std::vector<Extent*> cached;
    for_each_extent([&](Place p, const Extent& e) {
      if (e.state == State::cached) cached.push_back(&at(p));
    });
    std::sort(cached.begin(), cached.end(), [](const Extent* a, const Extent* b) { return a->freed_at > b->freed_at; });
    for (Extent* e : cached) {
      if (wired_ <= n) break;
      if (!e->wired) continue;
      e->wired = false;
      wired_ -= e->size;
      e->binned_at = ++clock_;
    }
  }

  std::size_t page_;
  Config config_;
  std::size_t memory_limit_, cache_limit_, wired_limit_;
  std::size_t active_ = 0, peak_ = 0, peak_with_mapped_ = 0, mapped_ = 0;
  std::size_t cache_bytes_ = 0, wired_ = 0, wired_mapped_ = 0;
  std::uint64_t system_allocations_ = 0;
  std::vector<Item> order_;  // residency order, oldest first
  // Blocks policy.
  std::vector<Block> cache_;  // least recently freed first
  // Arena policy.
  std::vector<Reservation> reservations_;  // in the order they were made
  std::uint64_t clock_ = 0;                // stamps freed_at and binned_at
  std::size_t decommitted_bytes_ = 0;
};

}  // namespace nuvec_test
