// A plain reference model of the allocator's policy (docs/allocator-policy.md):
// vectors and linear scans, no cleverness, so that it can be read against the
// document rule by rule. property_test.cc drives it beside a real device.
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

  enum class Outcome { empty, refused, hit, miss };
  struct Allocation {
    Outcome outcome = Outcome::empty;
    std::size_t size = 0;         // the block's size
    std::uintptr_t address = 0;   // the cached block reused (hit)
  };

  ReferenceModel(std::size_t page, const nuvec::MemoryStats& initial)
      : ReferenceModel(page, initial, Readings{}) {}
  ReferenceModel(std::size_t page, const nuvec::MemoryStats& initial, Readings readings)
      : page_(page),
        readings_(readings),
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

  // Live buffers and cached blocks: what the allocator holds from the system.
  std::size_t block_count() const {
    std::size_t n = cache_.size();
    for (const Item& item : order_) n += item.mapping ? 0 : 1;
    return n;
  }
  bool is_cached(std::uintptr_t address) const {
    return std::any_of(cache_.begin(), cache_.end(),
                       [&](const Block& b) { return b.key == address; });
  }
  bool is_live(std::uintptr_t address) const {
    return std::any_of(order_.begin(), order_.end(),
                       [&](const Item& i) { return !i.mapping && i.key == address; });
  }

  // new_buffer(len); `address` is where the device put the buffer (it names
  // the block from then on; used on a miss).
  Allocation allocate(std::size_t len, std::uintptr_t address) {
    const std::optional<std::size_t> size = model_allocation_size(len, page_);
    if (size && *size == 0) return {Outcome::empty, 0, 0};
    // 1. Limit.
    if (!size || *size > memory_limit_ - used()) return {Outcome::refused, size.value_or(0), 0};
    const std::size_t s = *size;
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
    return {Outcome::miss, s, address};
  }

  // A live buffer's destruction.
  void free(std::uintptr_t address) {
    auto it = find(address, false);
    const Item item = *it;
    order_.erase(it);
    active_ -= item.size;
    cache_.push_back(Block{item.key, item.size, item.wired});  // stays wired
    cache_bytes_ += item.size;
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
      for (auto it = cache_.rbegin(); it != cache_.rend() && wired_ > n; ++it) {
        if (it->wired) {
          it->wired = false;
          wired_ -= it->size;
        }
      }
      for (auto it = order_.rbegin(); it != order_.rend() && wired_ > n; ++it) {
        if (it->wired) unwire(*it);
      }
      if (readings_.promote_after_lowering) promote();
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
  struct Block {  // a cached block
    std::uintptr_t key;
    std::size_t size;
    bool wired;
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

  // Releases least recently freed blocks while the cache is over `limit`.
  void trim(std::size_t limit) {
    bool unwired = false;
    while (cache_bytes_ > limit) unwired |= release_oldest();
    if (unwired && !readings_.promote_after_each_release) promote();
  }

  // The cache yields to `extra` new bytes under the memory limit.
  void yield(std::size_t extra) {
    bool unwired = false;
    while (!cache_.empty() && used() + cache_bytes_ + extra > memory_limit_) {
      unwired |= release_oldest();
    }
    if (unwired && !readings_.promote_after_each_release) promote();
  }

  // Returns the least recently freed block to the system; true if it was wired.
  bool release_oldest() {
    const Block block = cache_.front();
    cache_.erase(cache_.begin());
    cache_bytes_ -= block.size;
    if (!block.wired) return false;
    wired_ -= block.size;
    if (readings_.promote_after_each_release) promote();
    return true;
  }

  std::size_t page_;
  Readings readings_;
  std::size_t memory_limit_, cache_limit_, wired_limit_;
  std::size_t active_ = 0, peak_ = 0, peak_with_mapped_ = 0, mapped_ = 0;
  std::size_t cache_bytes_ = 0, wired_ = 0, wired_mapped_ = 0;
  std::uint64_t system_allocations_ = 0;
  std::vector<Item> order_;   // residency order, oldest first
  std::vector<Block> cache_;  // least recently freed first
};

}  // namespace nuvec_test
