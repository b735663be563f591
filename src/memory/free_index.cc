#include "memory/free_index.h"

#include <bit>

namespace nuvec::detail {

namespace {
constexpr std::size_t kBits = 64;

// Bits of `word` at or above position `from` (from < 64).
std::uint64_t from_bit(std::uint64_t word, std::size_t from) { return word & (~std::uint64_t{0} << from); }
}  // namespace

FreeIndex::FreeIndex(std::size_t step, std::size_t binned_max)
    : step_(step),
      binned_max_(binned_max),
      bins_(binned_max / step, nullptr),
      occupied_((bins_.size() + kBits - 1) / kBits),
      summary_((occupied_.size() + kBits - 1) / kBits) {}

FreeIndex::~FreeIndex() {
  // The arena owns the extents; unlink them so the set's destructor is happy.
  large_.clear();
}

std::size_t FreeIndex::next_marked(std::size_t bin) const {
  std::size_t word = bin / kBits;
  if (const std::uint64_t bits = from_bit(occupied_[word], bin % kBits); bits != 0) {
    return word * kBits + static_cast<std::size_t>(std::countr_zero(bits));
  }
  ++word;
  for (std::size_t s = word / kBits; s < summary_.size(); ++s) {
    const std::uint64_t words = s == word / kBits ? from_bit(summary_[s], word % kBits) : summary_[s];
    if (words != 0) {
      const std::size_t w = s * kBits + static_cast<std::size_t>(std::countr_zero(words));
      return w * kBits + static_cast<std::size_t>(std::countr_zero(occupied_[w]));
    }
  }
  return kNone;
}

Block* FreeIndex::best_fit(std::size_t size) const {
  if (binned(size)) {
    if (const std::size_t bin = next_marked(bin_of(size)); bin != kNone) return bins_[bin];
    return large_.empty() ? nullptr : const_cast<Block*>(&*large_.begin());
  }
  const auto it = large_.lower_bound(size, SizeKey{});
  return it == large_.end() ? nullptr : const_cast<Block*>(&*it);
}

void FreeIndex::insert_large(Block& block) { large_.insert(block); }
void FreeIndex::erase_large(Block& block) { large_.erase(large_.iterator_to(block)); }

}  // namespace nuvec::detail
