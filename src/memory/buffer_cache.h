// BufferCache: freed blocks kept for reuse. Best fit by size (most recently
// freed first among equal sizes) and least-recently-freed eviction, both
// intrusive: putting, finding and taking blocks never allocates.
//
// Classes up to kBinnedBytes have a bin each (an array indexed by class), so
// a lookup checks a few bins; larger blocks sit in one ordered set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>

#include "memory/block.h"
#include "memory/size_classes.h"

namespace nuvec::detail {

class BufferCache {
 public:
  static constexpr std::size_t kBinnedBytes = std::size_t{32} << 20;

  explicit BufferCache(SizeClasses classes);
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;
  ~BufferCache();

  // The smallest block with min_size <= size < max_size (most recently freed
  // among equals), or nullptr. min_size is a class size. The block stays
  // cached until remove().
  Block* find(std::size_t min_size, std::size_t max_size) const;
  // Adds a block as the most recently freed.
  void put(Block& block);
  void remove(Block& block);
  // The least recently freed block, or nullptr.
  Block* oldest() const { return lru_.empty() ? nullptr : const_cast<Block*>(&lru_.front()); }

  std::size_t bytes() const { return bytes_; }
  const std::size_t& bytes_counter() const { return bytes_; }  // for BlockCache::bytes()
  bool empty() const { return lru_.empty(); }

  // Most recently freed first (for unwiring cached blocks newest first).
  template <class F>
  void for_each_newest_first(F&& f) {
    for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) f(*it);
  }

 private:
  // Bins: the most recently freed block at the front.
  using Bin = boost::intrusive::list<Block, boost::intrusive::member_hook<Block, ListHook, &Block::bin_hook>,
                                     boost::intrusive::constant_time_size<false>>;
  using LargeSet = boost::intrusive::set<Block, boost::intrusive::member_hook<Block, SetHook, &Block::large_hook>,
                                         boost::intrusive::compare<BySizeThenRecentlyFreed>>;
  using LruList = boost::intrusive::list<Block, boost::intrusive::member_hook<Block, ListHook, &Block::lru_hook>>;

  bool binned(std::size_t size) const { return size <= kBinnedBytes; }

  SizeClasses classes_;
  std::vector<Bin> bins_;  // one per class up to kBinnedBytes; sized once
  LargeSet large_;
  LruList lru_;
  std::size_t bytes_ = 0;
  std::uint64_t clock_ = 0;
};

}  // namespace nuvec::detail
