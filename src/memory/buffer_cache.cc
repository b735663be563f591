#include "memory/buffer_cache.h"

#include <limits>

namespace nuvec::detail {

namespace {
// Orders a size against blocks: before every block of that size.
struct SizeKey {
  bool operator()(std::size_t size, const Block& b) const { return size < b.size; }
  bool operator()(const Block& b, std::size_t size) const { return b.size < size; }
};
}  // namespace

BufferCache::~BufferCache() {
  // The owner releases the blocks; unlink so the hooks' destructors are happy.
  by_size_.clear();
  lru_.clear();
}

Block* BufferCache::find(std::size_t min_size, std::size_t max_size) const {
  auto it = by_size_.lower_bound(min_size, SizeKey{});
  if (it == by_size_.end() || it->size >= max_size) return nullptr;
  return const_cast<Block*>(&*it);
}

void BufferCache::put(Block& block) {
  block.freed_at = ++clock_;
  by_size_.insert(block);
  lru_.push_back(block);
  bytes_ += block.size;
}

void BufferCache::remove(Block& block) {
  by_size_.erase(by_size_.iterator_to(block));
  lru_.erase(lru_.iterator_to(block));
  bytes_ -= block.size;
}

Block* BufferCache::oldest() const {
  return lru_.empty() ? nullptr : const_cast<Block*>(&lru_.front());
}

}  // namespace nuvec::detail
