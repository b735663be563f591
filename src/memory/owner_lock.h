// OwnerLock: the lock of a thread cache (memory/thread_cache.h), a line one
// thread owns. Its owner takes it on every hit and free, uncontended, so it
// is an exchange to take and a store to give back; the Allocator, which
// takes it rarely and under its own lock, spins briefly while the owner
// finishes a hit (a mutex would cost the owner a call on every hit).
#pragma once

#include <atomic>

namespace nuvec::detail {

class OwnerLock {
 public:
  void lock() noexcept {
    while (taken_.exchange(true, std::memory_order_acquire)) {
      while (taken_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
    }
  }
  void unlock() noexcept { taken_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> taken_{false};
};

}  // namespace nuvec::detail
