#include "memory/thread_registry.h"

#include <memory>
#include <new>
#include <vector>

#include "memory/thread_cache.h"
#include "memory/thread_tier.h"

namespace nuvec::detail {

namespace {

// Caches of threads that exited, kept for new threads instead of freed: a
// thread freeing a buffer may still hold the address of the cache whose
// live list held it (read before that cache's thread exited), and takes its
// lock to find out. Bounded by the most threads alive at once. Never
// destroyed (threads may outlive static destruction); the registry's lock
// guards it.
std::vector<std::unique_ptr<ThreadCache>>& spare_caches() {
  static auto* spares = new std::vector<std::unique_ptr<ThreadCache>>;
  return *spares;
}

// This thread's caches, one per device it used. At the thread's exit each
// gives its blocks back to its device's tier (if that device still exists),
// which keeps its arena for the next thread.
struct CachesOfThisThread {
  std::vector<std::unique_ptr<ThreadCache>> caches;

  ~CachesOfThisThread() {
    exiting = true;
    thread_cache_detail::last = {};
    std::lock_guard registry(thread_cache_registry_lock());
    for (std::unique_ptr<ThreadCache>& cache : caches) {
      if (cache == nullptr) continue;
      if (cache->owner != nullptr) cache->owner->detach(*cache);
      try {
        spare_caches().push_back(std::move(cache));
      } catch (const std::bad_alloc&) {
        // No room to keep it: freed, as when its device was gone.
      }
    }
  }
  // Set once the destructor ran: a buffer freed later in this thread's exit
  // (another thread_local's destructor) goes to the shared cache.
  static thread_local bool exiting;
};

thread_local bool CachesOfThisThread::exiting = false;
thread_local CachesOfThisThread this_thread;

}  // namespace

std::mutex& thread_cache_registry_lock() {
  static std::mutex lock;
  return lock;
}

ThreadCache* thread_cache_of(ThreadTier& tier, std::uint64_t owner_id) noexcept {
  if (CachesOfThisThread::exiting) return nullptr;
  CachesOfThisThread& mine = this_thread;
  for (const std::unique_ptr<ThreadCache>& cache : mine.caches) {
    if (cache != nullptr && cache->owner_id() == owner_id) {
      thread_cache_detail::last = {owner_id, cache.get()};
      return cache.get();
    }
  }
  try {
    std::lock_guard registry(thread_cache_registry_lock());
    // This thread's caches of devices that are gone serve nothing any more
    // (no buffer of theirs is live): another device may reuse one.
    for (std::unique_ptr<ThreadCache>& cache : mine.caches) {
      if (cache != nullptr && cache->owner == nullptr) spare_caches().push_back(std::move(cache));
    }
    std::erase(mine.caches, nullptr);
    std::unique_ptr<ThreadCache> cache;
    if (!spare_caches().empty()) {
      cache = std::move(spare_caches().back());
      spare_caches().pop_back();
      cache->reuse(tier.size_classes(), owner_id);
    } else {
      cache = std::make_unique<ThreadCache>(tier.size_classes(), owner_id);
    }
    mine.caches.reserve(mine.caches.size() + 1);
    tier.attach(*cache);
    ThreadCache* made = cache.get();
    mine.caches.push_back(std::move(cache));
    thread_cache_detail::last = {owner_id, made};
    return made;
  } catch (const std::bad_alloc&) {
    return nullptr;  // the shared cache serves this thread
  }
}

}  // namespace nuvec::detail
