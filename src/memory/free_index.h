// FreeIndex: the cached extents of one arena kind and one stream, by size,
// for best fit: the smallest extent of at least a size, and among extents of
// that size the one that entered the index last. Intrusive, so inserting,
// finding and erasing never allocate.
//
// Sizes up to `binned_max` have a bin each (multiples of `step`): a list
// headed by one pointer, so that the heads of many bins share a cache line.
// A two-level bitmap marks the bins that hold extents, so a lookup costs a
// few word operations however far the best fit is. Larger extents sit in one ordered
// set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/intrusive/set.hpp>

#include "memory/block.h"

namespace nuvec::detail {

class FreeIndex {
 public:
  // `step` and `binned_max` are powers of two, binned_max a multiple of step.
  FreeIndex(std::size_t step, std::size_t binned_max);
  FreeIndex(const FreeIndex&) = delete;
  FreeIndex& operator=(const FreeIndex&) = delete;
  ~FreeIndex();

  // The smallest extent of at least `size` bytes (size > 0, a multiple of
  // step), the most recently inserted among equals; nullptr if none.
  Block* best_fit(std::size_t size) const;
  // Adds an extent; its binned_at must be larger than any in the index of
  // its size (the caller stamps it from one clock).
  void insert(Block& block) {
    if (!binned(block.size)) return insert_large(block);
    Block*& head = bins_[bin_of(block.size)];
    if (head == nullptr) mark(bin_of(block.size));
    block.bin_next = head;
    block.bin_prev = &head;
    if (head != nullptr) head->bin_prev = &block.bin_next;
    head = &block;
  }
  void erase(Block& block) {
    if (!binned(block.size)) return erase_large(block);
    *block.bin_prev = block.bin_next;
    if (block.bin_next != nullptr) {
      block.bin_next->bin_prev = block.bin_prev;
    } else if (const std::size_t bin = bin_of(block.size); block.bin_prev == &bins_[bin]) {
      unmark(bin);  // it was alone in its bin
    }
  }

 private:
  struct BySizeThenRecent {
    bool operator()(const Block& a, const Block& b) const {
      return a.size != b.size ? a.size < b.size : a.binned_at > b.binned_at;
    }
  };
  using LargeSet = boost::intrusive::multiset<Block, boost::intrusive::member_hook<Block, SetHook, &Block::large_hook>,
                                              boost::intrusive::compare<BySizeThenRecent>>;
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  bool binned(std::size_t size) const { return size <= binned_max_; }
  std::size_t bin_of(std::size_t size) const { return size / step_ - 1; }
  // The first non-empty bin at or after `bin`, or kNone.
  std::size_t next_marked(std::size_t bin) const;
  void mark(std::size_t bin) {
    const std::size_t word = bin / 64;
    occupied_[word] |= std::uint64_t{1} << (bin % 64);
    summary_[word / 64] |= std::uint64_t{1} << (word % 64);
  }
  void unmark(std::size_t bin) {
    const std::size_t word = bin / 64;
    occupied_[word] &= ~(std::uint64_t{1} << (bin % 64));
    if (occupied_[word] == 0) summary_[word / 64] &= ~(std::uint64_t{1} << (word % 64));
  }
  void insert_large(Block& block);
  void erase_large(Block& block);

  std::size_t step_;
  std::size_t binned_max_;
  std::vector<Block*> bins_;             // heads; sized once
  std::vector<std::uint64_t> occupied_;  // bit per bin: not empty
  std::vector<std::uint64_t> summary_;   // bit per word of occupied_: not zero
  LargeSet large_;
};

}  // namespace nuvec::detail
