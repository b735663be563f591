#include "memory/whole_block_cache.h"

#include <algorithm>
#include <cerrno>
#include <limits>
#include <new>

namespace nuvec::detail {

namespace {
std::size_t saturating_add(std::size_t a, std::size_t b) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  return a > kMax - b ? kMax : a + b;
}
}  // namespace

WholeBlockCache::WholeBlockCache(CacheOwner& owner, Residency& residency, StreamOrder* streams, BlockSource& source,
                                 SizeClasses classes)
    : BlockCache(owner, residency, streams), source_(source), classes_(classes), cache_(classes) {
  count_bytes_in(cache_.bytes_counter());
}

Block* WholeBlockCache::take_cached(std::size_t size, Stream stream, std::size_t headroom) {
  // Bounded best fit: a cached block serves when it is below
  // min(2·size, size + 2·page) and fits under the limit.
  const std::size_t bound =
      std::min({saturating_add(size, size), saturating_add(size, 2 * classes_.page), saturating_add(headroom, 1)});
  Block* block = cache_.find(size, bound);
  if (block == nullptr) return nullptr;
  if (const int error = residency_.wire_new(*block); error != 0) {
    refuse_wiring(residency_.how_to_lock_more(false), block->size, error);
  }
  cache_.remove(*block);
  hand_over(*block, stream);
  return block;
}

Block& WholeBlockCache::take_new(std::size_t len, std::size_t size, Stream stream) {
  void* address = nullptr;
  int error = source_.allocate(size, &address);
  if (error == ENOMEM && !empty()) {
    // The system is out of memory while we hold some: give it all back (after
    // the device has finished with it) and ask once more. Any other failure
    // (a broken device context, say) would not heal by retrying.
    synchronize();
    release_all();
    error = source_.allocate(size, &address);
  }
  if (error != 0) owner_.refuse_system(len, size, error);
  Block* block = new (std::nothrow) Block(address, size);
  if (block == nullptr) {
    source_.release(address, size, /*wired=*/false);
    owner_.refuse_bookkeeping(len, size);
  }
  block->stream = stream;
  if (const int wiring = residency_.wire_new(*block); wiring != 0) {
    source_.release(address, size, /*wired=*/false);
    delete block;
    refuse_wiring(residency_.how_to_lock_more(false), size, wiring);
  }
  return *block;
}

int WholeBlockCache::release_whole(Block& block) noexcept {
  if (const int error = source_.release(block.address, block.size, block.wired); error != 0) {
    return error;  // the system still holds it: it stays cached (and wired) where it was
  }
  cache_.remove(block);
  residency_.forget_wired(block);
  owner_.note_release(block.trace_id(), block.size);
  delete &block;
  return 0;
}

void WholeBlockCache::unwire_newest(std::size_t target) noexcept {
  cache_.for_each_newest_first([&](Block& block) {
    if (residency_.wired() > target) residency_.unwire_cached(block);
  });
}

void WholeBlockCache::release_everything() noexcept {
  while (Block* block = cache_.oldest()) {
    if (release_whole(*block) != 0) break;  // the system refused; nothing more can be done
  }
}

}  // namespace nuvec::detail
