// VmmReservations: address space reserved on one GPU, and the physical
// device memory mapped into it one granule at a time, through the driver's
// virtual memory management API (cuMemAddressReserve, cuMemCreate, cuMemMap,
// cuMemSetAccess; src/cuda/driver_api.h). It is what the CUDA backend's
// Backend::reserve/commit/decommit/unreserve do: the allocator's arena
// carves blocks from the reservations, and each granule of a reservation is
// committed (a handle of its own, mapped) at most once, however many blocks
// share it, so commit and decommit are idempotent.
//
// Every granule is `granule` bytes (the CUDA size classes' page, 2 MiB),
// which must be a multiple of the driver's allocation granularity.
// Thread-safe (one lock); the allocator calls it under its own lock anyway.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "memory/backend.h"

namespace nuvec::cuda {

class VmmReservations {
 public:
  // Raises InvalidArgument, saying what is missing, when the driver lacks
  // the API, the device does not support it, or the driver's granularity
  // does not divide `granule`. `reservation_bytes`: the size of a
  // reservation (a larger request gets one of its own size), rounded up to
  // granules.
  VmmReservations(int ordinal, std::size_t granule, std::size_t reservation_bytes);
  // Returns whatever is still reserved or committed (after waiting for the device).
  ~VmmReservations();
  VmmReservations(const VmmReservations&) = delete;
  VmmReservations& operator=(const VmmReservations&) = delete;

  // Address space only: nothing is committed. Half the size is asked for
  // when the driver refuses, down to `min_size` rounded up to granules.
  // {nullptr, 0} with errno set (ENOMEM: no address space) on failure.
  detail::ReservationSource::Reservation reserve(std::size_t min_size);
  // Maps a granule of physical memory at each granule of [address, address
  // + size) (granule-aligned, inside one reservation) that has none, and
  // lets this device and its peers read and write it. 0, or ENOMEM (the
  // device is out of memory) / EIO / EINVAL; on failure nothing new stays
  // committed.
  int commit(void* address, std::size_t size) noexcept;
  // Unmaps and releases the granules of the range that are committed, after
  // the host has waited for all queued work on the device (that work may
  // still use them: cuMemUnmap does not wait for it). 0, or EIO/EINVAL.
  int decommit(void* address, std::size_t size) noexcept;
  // Decommits a whole reservation and frees its address space.
  int unreserve(void* base, std::size_t size) noexcept;

  detail::Committed committed() const;
  void reset_committed_peak() noexcept;
  std::size_t granule() const { return granule_; }

 private:
  enum class Granule : std::uint8_t { empty, committed, pending };  // pending: mapped by the commit in progress
  struct Range {
    std::size_t size = 0;
    std::vector<unsigned long long> handles;  // CUmemGenericAllocationHandle of each committed granule
    std::vector<Granule> state;
  };

  // The reservation holding [address, address + size) (whole granules), or
  // null; `base` its base, [first, last) the range's granules. Lock held.
  Range* find(void* address, std::size_t size, std::uintptr_t& base, std::size_t& first, std::size_t& last);
  // commit() of granules [first, last) of `range`. Lock held.
  int commit_granules(std::uintptr_t base, Range& range, std::size_t first, std::size_t last) noexcept;
  // Unmaps and releases granules [first, last) of `range` that are in
  // `which` state. Lock held. 0, or EIO for the first refusal (the rest are
  // still tried).
  int release_granules(std::uintptr_t base, Range& range, std::size_t first, std::size_t last, Granule which) noexcept;
  void wait_for_device() noexcept;

  const int ordinal_;
  std::size_t granule_;
  std::size_t reservation_bytes_;
  std::vector<int> accessors_;  // devices that get read/write access: this one, then its peers

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Range> ranges_;  // by base address
  std::size_t committed_ = 0;
  std::size_t peak_ = 0;
};

}  // namespace nuvec::cuda
