// The thread-cache registry: which ThreadCache (memory/thread_cache.h) this
// thread has for each device's ThreadTier, made and attached on first use
// and detached at the thread's exit. The lookup of the last device used is
// one comparison, so it sits on the hit path.
#pragma once

#include <cstdint>
#include <mutex>

namespace nuvec::detail {

class ThreadCache;
class ThreadTier;

// This thread's cache for the tier `tier_id` (`tier`), created and attached
// to it on first use; null if none can serve (the thread is exiting, or the
// bookkeeping allocation failed).
ThreadCache* thread_cache_of(ThreadTier& tier, std::uint64_t tier_id) noexcept;

namespace thread_cache_detail {
struct Last {
  std::uint64_t owner_id = 0;
  ThreadCache* cache = nullptr;
};
inline thread_local Last last;
}  // namespace thread_cache_detail

inline ThreadCache* find_thread_cache(ThreadTier& tier, std::uint64_t tier_id) noexcept {
  const thread_cache_detail::Last& last = thread_cache_detail::last;
  if (last.owner_id == tier_id) [[likely]] return last.cache;
  return thread_cache_of(tier, tier_id);
}

// This thread's cache for `tier_id` if it has one already (the last one it
// used), else null; never makes one.
inline ThreadCache* last_thread_cache(std::uint64_t tier_id) noexcept {
  const thread_cache_detail::Last& last = thread_cache_detail::last;
  return last.owner_id == tier_id ? last.cache : nullptr;
}

// The registry's lock: held while a thread cache is attached to or detached
// from its tier (thread exit, device end). Taken before the device's lock.
std::mutex& thread_cache_registry_lock();

}  // namespace nuvec::detail
