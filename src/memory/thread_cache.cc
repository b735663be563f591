#include "memory/thread_cache.h"

#include <memory>
#include <new>
#include <vector>

#include "memory/allocator.h"

namespace nuvec::detail {

namespace {

// This thread's caches, one per device it used. At the thread's exit each
// gives its blocks back to its device (if that still exists).
struct ThreadCaches {
  std::vector<std::unique_ptr<ThreadCache>> caches;

  ~ThreadCaches() {
    exiting = true;
    thread_cache_detail::last = {};
    std::lock_guard registry(thread_cache_registry_lock());
    for (const std::unique_ptr<ThreadCache>& cache : caches) {
      if (cache->owner != nullptr) cache->owner->detach(*cache);
    }
  }
  // Set once the destructor ran: a buffer freed later in this thread's exit
  // (another thread_local's destructor) goes to the shared cache.
  static thread_local bool exiting;
};

thread_local bool ThreadCaches::exiting = false;
thread_local ThreadCaches this_thread;

}  // namespace

std::mutex& thread_cache_registry_lock() {
  static std::mutex lock;
  return lock;
}

ThreadCache* thread_cache_of(Allocator& allocator, std::uint64_t owner_id) noexcept {
  if (ThreadCaches::exiting) return nullptr;
  ThreadCaches& mine = this_thread;
  for (const std::unique_ptr<ThreadCache>& cache : mine.caches) {
    if (cache->owner_id() == owner_id) {
      thread_cache_detail::last = {owner_id, cache.get()};
      return cache.get();
    }
  }
  try {
    auto cache = std::make_unique<ThreadCache>(allocator.size_classes(), owner_id);
    std::lock_guard registry(thread_cache_registry_lock());
    // Caches of devices that are gone serve nothing any more.
    std::erase_if(mine.caches, [](const std::unique_ptr<ThreadCache>& c) { return c->owner == nullptr; });
    mine.caches.reserve(mine.caches.size() + 1);
    allocator.attach(*cache);
    ThreadCache* made = cache.get();
    mine.caches.push_back(std::move(cache));
    thread_cache_detail::last = {owner_id, made};
    return made;
  } catch (const std::bad_alloc&) {
    return nullptr;  // the shared cache serves this thread
  }
}

}  // namespace nuvec::detail
