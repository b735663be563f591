// A backend shaped like the CUDA arena's, on the host: CUDA's size classes
// (512-byte steps, 2 MiB pages), address space reserved without access,
// and pages that become usable (readable, writable, counted) only through
// commit(), out of a fixed capacity, and fault again once decommitted, as a
// GPU's granules. It tests the allocator's commit path on a machine without
// a GPU: a block handed out before its pages were committed faults.
#pragma once

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "cpu/cpu_backend.h"
#include "memory/backend.h"
#include "nuvec/cuda.h"

namespace nuvec_test {

class CommittingBackend final : public nuvec::detail::Backend,
                                private nuvec::detail::ReservationSource,
                                private nuvec::detail::Wiring {
 public:
  static constexpr std::size_t kPage = nuvec::cuda::kLargeStep;

  // `capacity`: the bytes commit() may hold at once; `reservation_bytes`:
  // the address space of a reservation.
  explicit CommittingBackend(std::size_t capacity, std::size_t reservation_bytes = std::size_t{1} << 36)
      : capacity_(capacity), reservation_bytes_(reservation_bytes) {}
  ~CommittingBackend() override {
    for (const auto& [base, pages] : reservations_) ::munmap(reinterpret_cast<void*>(base), pages.size() * kPage);
  }

  // What the backend was asked, for tests to read.
  std::size_t committed_bytes() const { return committed_; }
  std::size_t live_reservations() const { return reservations_.size(); }
  std::size_t commit_calls() const { return commit_calls_; }
  // The errno the next commits return (0: obey the capacity).
  void fail_commits_with(int error) { forced_error_ = error; }

  std::string_view name() const override { return "committing"; }
  nuvec::detail::SizeClasses size_classes() const override { return {nuvec::cuda::kSmallStep, kPage}; }
  nuvec::detail::ReservationSource* reservations() override { return this; }
  // As a GPU's: buffers are never wired, only mapped files (here: never).
  nuvec::detail::Wiring* buffer_wiring() override { return nullptr; }
  nuvec::detail::Wiring& mapping_wiring() override { return *this; }
  nuvec::detail::FileMapper& files() override { return host_->files(); }
  // Far above the capacity: only commit() refuses (as a GPU whose memory
  // limit was raised past what it has).
  static constexpr std::size_t kMemoryLimit = std::size_t{1} << 40;
  std::size_t default_memory_limit() const override { return kMemoryLimit; }

 private:
  int reserve(std::size_t min_size, bool, Reservation* out) noexcept override {
    const std::size_t size = std::max(reservation_bytes_, (min_size + kPage - 1) / kPage * kPage);
    // One page more, so that a page-aligned range of `size` lies inside.
    void* raw = ::mmap(nullptr, size + kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return errno;
    const auto base = (reinterpret_cast<std::uintptr_t>(raw) + kPage - 1) / kPage * kPage;
    reservations_[base] = std::vector<bool>(size / kPage);
    extra_[base] = raw;
    *out = {reinterpret_cast<void*>(base), size};
    return 0;
  }
  int commit(void* address, std::size_t size) noexcept override {
    ++commit_calls_;
    std::vector<bool>* pages = nullptr;
    std::size_t first = 0;
    if (!find(address, size, pages, first)) return EINVAL;
    std::size_t fresh = 0;
    for (std::size_t i = first; i < first + size / kPage; ++i) fresh += (*pages)[i] ? 0 : 1;
    if (fresh == 0) return 0;
    if (forced_error_ != 0) return forced_error_;
    if (committed_ + fresh * kPage > capacity_) return ENOMEM;
    for (std::size_t i = first; i < first + size / kPage; ++i) {
      if ((*pages)[i]) continue;
      if (::mprotect(page_address(address, i - first), kPage, PROT_READ | PROT_WRITE) != 0) return errno;
      (*pages)[i] = true;
      committed_ += kPage;
    }
    peak_ = std::max(peak_, committed_);
    return 0;
  }
  int decommit(void* address, std::size_t size) noexcept override {
    std::vector<bool>* pages = nullptr;
    std::size_t first = 0;
    if (!find(address, size, pages, first)) return EINVAL;
    for (std::size_t i = first; i < first + size / kPage; ++i) {
      if (!(*pages)[i]) continue;
      // Gone, as a GPU's unmapped granule: a later touch faults.
      void* page = page_address(address, i - first);
      if (::madvise(page, kPage, MADV_DONTNEED) != 0 || ::mprotect(page, kPage, PROT_NONE) != 0) return errno;
      (*pages)[i] = false;
      committed_ -= kPage;
    }
    return 0;
  }
  int unreserve(void* base, std::size_t size) noexcept override {
    const auto it = reservations_.find(reinterpret_cast<std::uintptr_t>(base));
    if (it == reservations_.end() || it->second.size() * kPage != size) return EINVAL;
    for (bool page : it->second) committed_ -= page ? kPage : 0;
    ::munmap(extra_[it->first], size + kPage);
    extra_.erase(it->first);
    reservations_.erase(it);
    return 0;
  }
  std::optional<nuvec::detail::Committed> committed() const override {
    return nuvec::detail::Committed{committed_, peak_};
  }
  void reset_committed_peak() noexcept override { peak_ = committed_; }

  int wire(const void*, std::size_t) noexcept override { return EOPNOTSUPP; }
  void unwire(const void*, std::size_t) noexcept override {}
  std::size_t lockable_bytes() const override { return std::size_t{1} << 30; }  // nothing is locked
  std::string_view how_to_lock_more() const override { return "this test backend locks nothing"; }

 private:
  static void* page_address(void* address, std::size_t index) {
    return static_cast<std::byte*>(address) + index * kPage;
  }
  bool find(void* address, std::size_t size, std::vector<bool>*& pages, std::size_t& first) {
    const auto a = reinterpret_cast<std::uintptr_t>(address);
    auto it = reservations_.upper_bound(a);
    if (it == reservations_.begin()) return false;
    --it;
    const std::size_t bytes = it->second.size() * kPage;
    if (a - it->first > bytes || size > bytes - (a - it->first) || (a - it->first) % kPage || size % kPage) {
      return false;
    }
    pages = &it->second;
    first = (a - it->first) / kPage;
    return true;
  }

  std::unique_ptr<nuvec::detail::Backend> host_ = nuvec::cpu::make_backend();
  std::size_t capacity_;
  std::size_t reservation_bytes_;
  std::map<std::uintptr_t, std::vector<bool>> reservations_;  // committed pages of each, by base
  std::map<std::uintptr_t, void*> extra_;                      // the mapping each lies in
  std::size_t committed_ = 0;
  std::size_t peak_ = 0;
  std::size_t commit_calls_ = 0;
  int forced_error_ = 0;
};

}  // namespace nuvec_test
