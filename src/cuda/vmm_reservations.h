// VmmReservations: address space reserved on one GPU, and the physical
// device memory mapped into it, through the driver's virtual memory
// management API (cuMemAddressReserve, cuMemCreate, cuMemMap,
// cuMemSetAccess; src/cuda/driver_api.h). It is what the CUDA backend's
// Backend::reserve/commit/decommit/unreserve do: the allocator's arena
// carves blocks from the reservations, and each granule of a reservation is
// committed at most once, however many blocks share it, so commit and
// decommit are idempotent.
//
// Every granule is `granule` bytes (the CUDA size classes' page, 2 MiB),
// which must be a multiple of the driver's allocation granularity. A commit
// maps its run of new granules in chunks of up to `chunk_bytes`, one
// physical allocation (handle) each: the driver's cost is mostly per handle
// (bench/results/2026-11-30-cuda-arena-commit.md: 24 ms per GiB in 2 MiB
// handles, 0.35 ms in one), and an upload's copies wait for their buffers.
// The price: a chunk goes back to the device whole. A decommit that covers
// part of a chunk leaves that part held ("orphaned": decommitted for the
// arena, still mapped) until the rest of the chunk is decommitted too; a
// commit of an orphaned granule takes it back without a driver call.
// committed() counts what is held, orphans included.
//
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
  // The largest physical allocation one commit makes by default.
  static constexpr std::size_t kDefaultChunkBytes = std::size_t{32} << 20;

  // Raises InvalidArgument, saying what is missing, when the driver lacks
  // the API, the device does not support it, or the driver's granularity
  // does not divide `granule`. `reservation_bytes`: the size of a
  // reservation (a larger request gets one of its own size), rounded up to
  // granules. `chunk_bytes`: the largest physical allocation, rounded up to
  // granules (one granule: every granule its own handle).
  VmmReservations(int ordinal, std::size_t granule, std::size_t reservation_bytes,
                  std::size_t chunk_bytes = kDefaultChunkBytes);
  // Returns whatever is still reserved or committed (after waiting for the device).
  ~VmmReservations();
  VmmReservations(const VmmReservations&) = delete;
  VmmReservations& operator=(const VmmReservations&) = delete;

  // Address space only: nothing is committed. Half the size is asked for
  // when the driver refuses, down to `min_size` rounded up to granules.
  // {nullptr, 0} with errno set (ENOMEM: no address space) on failure.
  detail::ReservationSource::Reservation reserve(std::size_t min_size);
  // Maps physical memory at each granule of [address, address + size)
  // (granule-aligned, inside one reservation) that has none, and lets this
  // device and its peers read and write it. 0, or ENOMEM (the device is out
  // of memory) / EIO / EINVAL; on failure nothing new stays committed.
  int commit(void* address, std::size_t size) noexcept;
  // Gives the granules of the range back: each chunk all of whose granules
  // are then decommitted is unmapped and released, after the host has
  // waited for all queued work on the device (that work may still use it:
  // cuMemUnmap does not wait for it). 0, or EIO/EINVAL (the range is then
  // committed as before).
  int decommit(void* address, std::size_t size) noexcept;
  // Releases a whole reservation's memory and frees its address space.
  int unreserve(void* base, std::size_t size) noexcept;

  detail::Committed committed() const;
  void reset_committed_peak() noexcept;
  std::size_t granule() const { return granule_; }
  std::size_t chunk_bytes() const { return chunk_granules_ * granule_; }

 private:
  // empty: nothing mapped; committed: mapped, in use by the arena; orphan:
  // mapped, decommitted by the arena, kept because its chunk is partly
  // committed; pending: mapped by the commit in progress.
  enum class Granule : std::uint8_t { empty, committed, orphan, pending };
  struct Range {
    std::size_t size = 0;
    std::vector<Granule> state;
    // Of a mapped granule: the first granule of its chunk. At a chunk's
    // first granule: the chunk's handle (CUmemGenericAllocationHandle) and length in granules.
    std::vector<std::uint32_t> head;
    std::vector<unsigned long long> handle;
    std::vector<std::uint32_t> length;
  };

  // The reservation holding [address, address + size) (whole granules), or
  // null; `base` its base, [first, last) the range's granules. Lock held.
  Range* find(void* address, std::size_t size, std::uintptr_t& base, std::size_t& first, std::size_t& last);
  // commit() of granules [first, last) of `range`. Lock held.
  int commit_granules(std::uintptr_t base, Range& range, std::size_t first, std::size_t last) noexcept;
  // Maps one chunk of `count` granules at granule `at` (pending). A
  // CUresult: 0 for success.
  int map_chunk(std::uintptr_t base, Range& range, std::size_t at, std::size_t count) noexcept;
  // Unmaps and releases the chunk that starts at granule `at`; 0, or EIO.
  int release_chunk(std::uintptr_t base, Range& range, std::size_t at) noexcept;
  // Releases the pending chunks of [first, last) (a failed commit's).
  void release_pending(std::uintptr_t base, Range& range, std::size_t first, std::size_t last) noexcept;
  // Whether every granule of the chunk that starts at `at` is orphaned.
  static bool all_orphans(const Range& range, std::size_t at);
  void wait_for_device() noexcept;

  const int ordinal_;
  std::size_t granule_;
  std::size_t reservation_bytes_;
  std::size_t chunk_granules_ = 1;
  std::vector<int> accessors_;  // devices that get read/write access: this one, then its peers

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Range> ranges_;  // by base address
  std::size_t committed_ = 0;  // held: committed and orphaned granules
  std::size_t peak_ = 0;
};

}  // namespace nuvec::cuda
