#include "memory/buffer_cache.h"

namespace nuvec::detail {

BufferCache::BufferCache(SizeClasses classes) : classes_(classes), bins_(classes.index(kBinnedBytes) + 1) {}

BufferCache::~BufferCache() {
  // The owner releases the blocks; unlink them so the hooks' destructors are happy.
  for (Bin& bin : bins_) bin.clear();
  large_.clear();
  lru_.clear();
}

Block* BufferCache::find(std::size_t min_size, std::size_t max_size) const {
  std::size_t size = min_size;
  for (; size < max_size && binned(size); size = classes_.next(size)) {
    const Bin& bin = bins_[classes_.index(size)];
    if (!bin.empty()) return const_cast<Block*>(&bin.front());
  }
  if (size >= max_size || large_.empty()) return nullptr;
  auto it = large_.lower_bound(size, SizeKey{});
  if (it == large_.end() || it->size >= max_size) return nullptr;
  return const_cast<Block*>(&*it);
}

void BufferCache::put(Block& block) {
  block.freed_at = ++clock_;
  if (binned(block.size)) {
    bins_[classes_.index(block.size)].push_front(block);
  } else {
    large_.insert(block);
  }
  lru_.push_back(block);
  bytes_ += block.size;
}

void BufferCache::remove(Block& block) {
  if (binned(block.size)) {
    bins_[classes_.index(block.size)].erase(Bin::s_iterator_to(block));
  } else {
    large_.erase(large_.iterator_to(block));
  }
  lru_.erase(lru_.iterator_to(block));
  bytes_ -= block.size;
}

}  // namespace nuvec::detail
