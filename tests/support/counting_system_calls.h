// SystemCalls that forward to libc while keeping books on what is live
// (anonymous and file mappings, heap blocks, locked ranges, open files) and
// on what was decommitted (madvise MADV_DONTNEED), and that can make any call
// fail with a chosen errno.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "cpu/system_calls.h"

namespace nuvec_test {

class CountingSystemCalls : public nuvec::cpu::SystemCalls {
 public:
  enum class Call {
    mmap_anonymous,
    mmap_file,
    munmap,
    mlock,
    munlock,
    open,
    fstat,
    close,
    aligned_alloc,
    free,
    madvise_dontneed,  // decommits; other advice is counted in madvise_other
    madvise_other,
  };
  static constexpr std::size_t kCalls = 12;

  // What is live now, by the books.
  struct Totals {
    std::size_t blocks = 0;         // anonymous mappings + heap blocks
    std::size_t block_bytes = 0;    // their bytes
    std::size_t file_maps = 0;      // file mappings
    std::size_t file_map_bytes = 0;
    std::size_t locked_bytes = 0;   // mlock'ed, not yet munlock'ed/unmapped/freed
    std::size_t open_fds = 0;
    std::size_t unknown_releases = 0;    // munmap/free of something never handed out
    std::size_t freed_while_locked = 0;  // heap blocks freed with a lock on them
    std::size_t double_locks = 0;        // mlock of an address already locked
    std::size_t decommitted_bytes = 0;   // by MADV_DONTNEED so far, in all
    std::size_t decommits_while_locked = 0;  // MADV_DONTNEED over locked bytes
    std::size_t decommits_outside = 0;       // MADV_DONTNEED not inside one anonymous mapping
  };

  // After letting `after` more calls of `call` through, the next `times`
  // (every one when negative) fail with `error`.
  void fail(Call call, int error, int times = -1, int after = 0) {
    std::lock_guard lock(mutex_);
    failures_[index(call)] = {error, times, after};
  }
  // No call fails any more.
  void heal() {
    std::lock_guard lock(mutex_);
    failures_ = {};
  }
  // Calls of that kind made so far, failed ones included.
  std::size_t calls(Call call) const {
    std::lock_guard lock(mutex_);
    return calls_[index(call)];
  }
  // Calls of that kind that were made to fail.
  std::size_t injected(Call call) const {
    std::lock_guard lock(mutex_);
    return injected_[index(call)];
  }
  // System allocations attempted (anonymous mmap + aligned_alloc).
  std::size_t allocation_calls() const {
    std::lock_guard lock(mutex_);
    return calls_[index(Call::mmap_anonymous)] + calls_[index(Call::aligned_alloc)];
  }
  Totals totals() const {
    std::lock_guard lock(mutex_);
    Totals t = totals_;
    t.blocks = anonymous_.size() + heap_.size();
    t.file_maps = files_.size();
    t.open_fds = fds_.size();
    return t;
  }
  // Really unmaps what a failed munmap left mapped and nobody unmapped since
  // (call after heal(), once the device is gone).
  void unmap_leftovers() {
    std::lock_guard lock(mutex_);
    for (auto [address, length] : leftovers_) {
      SystemCalls::munmap(address, length);
      const auto key = reinterpret_cast<std::uintptr_t>(address);
      totals_.block_bytes -= cut(anonymous_, key, length);
      totals_.file_map_bytes -= cut(files_, key, length);
      totals_.locked_bytes -= cut(locked_, key, length);
    }
    leftovers_.clear();
  }

  void* mmap(void* addr, std::size_t length, int prot, int flags, int fd, off_t offset) override {
    const bool anonymous = (flags & MAP_ANONYMOUS) != 0;
    if (take_failure(anonymous ? Call::mmap_anonymous : Call::mmap_file)) return MAP_FAILED;
    void* p = SystemCalls::mmap(addr, length, prot, flags, fd, offset);
    if (p != MAP_FAILED) {
      std::lock_guard lock(mutex_);
      auto key = reinterpret_cast<std::uintptr_t>(p);
      if (anonymous) {
        anonymous_[key] = length;
        totals_.block_bytes += length;
      } else {
        files_[key] = length;
        totals_.file_map_bytes += length;
      }
    }
    return p;
  }
  int munmap(void* addr, std::size_t length) override {
    if (take_failure(Call::munmap)) {
      std::lock_guard lock(mutex_);
      leftovers_.emplace_back(addr, length);
      return -1;
    }
    const int rc = SystemCalls::munmap(addr, length);
    if (rc == 0) {
      std::lock_guard lock(mutex_);
      auto key = reinterpret_cast<std::uintptr_t>(addr);
      const std::size_t anonymous = cut(anonymous_, key, length);
      const std::size_t file = cut(files_, key, length);
      totals_.block_bytes -= anonymous;
      totals_.file_map_bytes -= file;
      totals_.locked_bytes -= cut(locked_, key, length);  // munmap unlocks
      if (anonymous == 0 && file == 0) ++totals_.unknown_releases;
      // A retry of a failed munmap: nothing is left over any more.
      std::erase_if(leftovers_, [&](const auto& l) { return l.first == addr; });
    }
    return rc;
  }
  int madvise(void* addr, std::size_t length, int advice) override {
    if (advice != MADV_DONTNEED) {
      if (take_failure(Call::madvise_other)) return -1;
      return SystemCalls::madvise(addr, length, advice);
    }
    if (take_failure(Call::madvise_dontneed)) return -1;
    const int rc = SystemCalls::madvise(addr, length, advice);
    if (rc == 0) {
      std::lock_guard lock(mutex_);
      const auto key = reinterpret_cast<std::uintptr_t>(addr);
      totals_.decommitted_bytes += length;
      if (overlaps(locked_, key, length)) ++totals_.decommits_while_locked;
      auto it = anonymous_.upper_bound(key);
      if (it == anonymous_.begin() || std::prev(it)->first + std::prev(it)->second < key + length) {
        ++totals_.decommits_outside;
      }
    }
    return rc;
  }
  int mlock(const void* addr, std::size_t length) override {
    if (take_failure(Call::mlock)) return -1;
    const int rc = SystemCalls::mlock(addr, length);
    if (rc == 0) {
      std::lock_guard lock(mutex_);
      auto [it, inserted] = locked_.try_emplace(reinterpret_cast<std::uintptr_t>(addr), length);
      if (inserted) {
        totals_.locked_bytes += length;
      } else {
        ++totals_.double_locks;
      }
    }
    return rc;
  }
  int munlock(const void* addr, std::size_t length) override {
    if (take_failure(Call::munlock)) return -1;
    const int rc = SystemCalls::munlock(addr, length);
    if (rc == 0) {
      std::lock_guard lock(mutex_);
      totals_.locked_bytes -= cut(locked_, reinterpret_cast<std::uintptr_t>(addr), length);
    }
    return rc;
  }
  int open(const char* path, int flags) override {
    if (take_failure(Call::open)) return -1;
    const int fd = SystemCalls::open(path, flags);
    if (fd >= 0) {
      std::lock_guard lock(mutex_);
      fds_.insert(fd);
    }
    return fd;
  }
  int fstat(int fd, struct stat* st) override {
    if (take_failure(Call::fstat)) return -1;
    return SystemCalls::fstat(fd, st);
  }
  int close(int fd) override {
    if (take_failure(Call::close)) return -1;
    {
      std::lock_guard lock(mutex_);
      fds_.erase(fd);
    }
    return SystemCalls::close(fd);
  }
  void* aligned_alloc(std::size_t alignment, std::size_t size) override {
    if (take_failure(Call::aligned_alloc)) return nullptr;
    void* p = SystemCalls::aligned_alloc(alignment, size);
    if (p != nullptr) {
      std::lock_guard lock(mutex_);
      heap_[reinterpret_cast<std::uintptr_t>(p)] = size;
      totals_.block_bytes += size;
    }
    return p;
  }
  void free(void* p) override {
    if (p != nullptr) {
      std::lock_guard lock(mutex_);
      ++calls_[index(Call::free)];
      auto key = reinterpret_cast<std::uintptr_t>(p);
      auto it = heap_.find(key);
      if (it == heap_.end()) {
        ++totals_.unknown_releases;
      } else {
        const std::size_t size = it->second;
        totals_.block_bytes -= size;
        heap_.erase(it);
        const std::size_t unlocked = cut(locked_, key, size);
        if (unlocked != 0) {
          totals_.locked_bytes -= unlocked;
          ++totals_.freed_while_locked;
        }
      }
    }
    SystemCalls::free(p);
  }

 private:
  struct Failure {
    int error = 0;
    int times = 0;
    int after = 0;
  };
  using Regions = std::map<std::uintptr_t, std::size_t>;  // start -> length

  static std::size_t index(Call call) { return static_cast<std::size_t>(call); }

  // Counts the call; true (with errno set) when it is to fail.
  bool take_failure(Call call) {
    std::lock_guard lock(mutex_);
    ++calls_[index(call)];
    Failure& f = failures_[index(call)];
    if (f.error == 0 || f.times == 0) return false;
    if (f.after > 0) {
      --f.after;
      return false;
    }
    if (f.times > 0) --f.times;
    ++injected_[index(call)];
    errno = f.error;
    return true;
  }

  // Whether any region has a byte in [start, start + length).
  static bool overlaps(const Regions& regions, std::uintptr_t start, std::size_t length) {
    auto it = regions.upper_bound(start);
    if (it != regions.begin() && std::prev(it)->first + std::prev(it)->second > start) return true;
    return it != regions.end() && it->first < start + length;
  }

  // Removes [start, start + length) from `regions`, splitting regions that
  // stick out of it; returns the bytes removed.
  static std::size_t cut(Regions& regions, std::uintptr_t start, std::size_t length) {
    const std::uintptr_t end = start + length;
    std::size_t removed = 0;
    auto it = regions.upper_bound(start);
    if (it != regions.begin()) --it;
    std::vector<std::pair<std::uintptr_t, std::size_t>> keep;
    while (it != regions.end() && it->first < end) {
      const std::uintptr_t r_start = it->first;
      const std::uintptr_t r_end = r_start + it->second;
      if (r_end <= start) {
        ++it;
        continue;
      }
      const std::uintptr_t lo = std::max(r_start, start);
      const std::uintptr_t hi = std::min(r_end, end);
      removed += hi - lo;
      if (r_start < lo) keep.emplace_back(r_start, lo - r_start);
      if (hi < r_end) keep.emplace_back(hi, r_end - hi);
      it = regions.erase(it);
    }
    for (auto [s, l] : keep) regions[s] = l;
    return removed;
  }

  mutable std::mutex mutex_;
  std::array<Failure, kCalls> failures_{};
  std::array<std::size_t, kCalls> calls_{};
  std::array<std::size_t, kCalls> injected_{};
  Regions anonymous_, files_, heap_, locked_;
  std::set<int> fds_;
  std::vector<std::pair<void*, std::size_t>> leftovers_;
  Totals totals_;
};

}  // namespace nuvec_test
