#include "cuda/vmm_reservations.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "cuda/cuda_error.h"
#include "cuda/driver_api.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::cuda {

namespace {

// A commit of at least this much new memory first asks cudaMemGetInfo
// whether the device has it: a request past the card's memory is refused
// at once instead of after mapping (and then unmapping) every granule the
// card does have.
constexpr std::size_t kCheckFreeFrom = std::size_t{64} << 20;

int errno_for(CUresult result) { return result == CUDA_ERROR_OUT_OF_MEMORY ? ENOMEM : EIO; }

// The driver calls need the device's primary context current on this thread.
// cudaSetDevice makes it so (and initialises it) even where the runtime
// already calls the device current: a thread that has made no runtime call
// yet has no context bound. The caller's device is restored.
class CurrentDevice {
 public:
  explicit CurrentDevice(int ordinal) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      previous_ = -1;
    }
    if (cudaSetDevice(ordinal) != cudaSuccess) (void)cudaGetLastError();
    if (previous_ == ordinal) previous_ = -1;
  }
  ~CurrentDevice() {
    if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = -1;
};

CUmemAllocationProp device_memory(int ordinal) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;  // device memory, resident, as cudaMalloc's
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  return prop;
}

std::size_t round_up(std::size_t n, std::size_t step) { return (n + step - 1) / step * step; }

}  // namespace

VmmReservations::VmmReservations(int ordinal, std::size_t granule, std::size_t reservation_bytes,
                                 std::size_t chunk_bytes)
    : ordinal_(ordinal), granule_(granule) {
  const auto unusable = [&](const std::string& why) {
    return InvalidArgument(fmt::format(
        "CUDA device {}: nuvec's arena needs the driver's virtual memory management API, but {}; update the "
        "NVIDIA driver, or set NUVEC_CUDA_ARENA=0 for whole cudaMalloc blocks",
        ordinal, why));
  };
  CurrentDevice current(ordinal_);
  std::string why;
  const DriverApi* api = driver_api(&why);
  if (api == nullptr) throw unusable(why);
  CUdevice device = 0;
  int supported = 0;
  if (const CUresult r = api->device_get(&device, ordinal_); r != CUDA_SUCCESS) {
    throw unusable(driver_error("cuDeviceGet", r));
  }
  if (const CUresult r =
          api->device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device);
      r != CUDA_SUCCESS || supported == 0) {
    throw unusable(r != CUDA_SUCCESS ? driver_error("cuDeviceGetAttribute", r) : "the device does not support it");
  }
  const CUmemAllocationProp prop = device_memory(ordinal_);
  std::size_t minimum = 0;
  if (const CUresult r = api->mem_get_allocation_granularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
      r != CUDA_SUCCESS) {
    throw unusable(driver_error("cuMemGetAllocationGranularity", r));
  }
  if (minimum == 0 || granule_ % minimum != 0) {
    throw unusable(fmt::format("its allocation granularity ({}) does not divide the size classes' page ({})",
                               format_bytes(minimum), format_bytes(granule_)));
  }
  reservation_bytes_ = round_up(std::max(reservation_bytes, granule_), granule_);
  chunk_granules_ = std::max<std::size_t>(1, round_up(chunk_bytes, granule_) / granule_);
  // Peers get access too: a copy queued on another device (cudaMemcpy with
  // that device current) reaches this memory through it, as it reaches
  // cudaMalloc's without asking.
  accessors_.push_back(ordinal_);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) (void)cudaGetLastError();
  for (int peer = 0; peer < count; ++peer) {
    int can = 0;
    if (peer != ordinal_ && cudaDeviceCanAccessPeer(&can, peer, ordinal_) == cudaSuccess && can != 0) {
      accessors_.push_back(peer);
    }
    (void)cudaGetLastError();
  }
}

VmmReservations::~VmmReservations() {
  while (!ranges_.empty()) {
    const auto [base, range] = *ranges_.begin();
    if (unreserve(reinterpret_cast<void*>(base), range.size) != 0) ranges_.erase(base);  // reported; go on
  }
}

detail::ReservationSource::Reservation VmmReservations::reserve(std::size_t min_size) {
  const DriverApi& api = *driver_api();
  const std::size_t least = round_up(min_size, granule_);
  if (least < min_size) {  // overflow
    errno = ENOMEM;
    return {};
  }
  std::size_t size = std::max(least, reservation_bytes_);
  CurrentDevice current(ordinal_);
  for (;;) {
    CUdeviceptr base = 0;
    const CUresult r = api.mem_address_reserve(&base, size, granule_, 0, 0);
    if (r == CUDA_SUCCESS) {
      Range range;
      try {
        range.size = size;
        const std::size_t granules = size / granule_;
        range.state.assign(granules, Granule::empty);
        range.head.assign(granules, 0);
        range.handle.assign(granules, 0);
        range.length.assign(granules, 0);
        std::lock_guard lock(mutex_);
        ranges_.emplace(static_cast<std::uintptr_t>(base), std::move(range));
      } catch (const std::bad_alloc&) {
        api.mem_address_free(base, size);
        errno = ENOMEM;
        return {};
      }
      return {reinterpret_cast<void*>(base), size};
    }
    if (r != CUDA_ERROR_OUT_OF_MEMORY || size == least) {
      errno = errno_for(r);
      return {};
    }
    size = std::max(least, round_up(size / 2, granule_));
  }
}

VmmReservations::Range* VmmReservations::find(void* address_pointer, std::size_t size, std::uintptr_t& base,
                                               std::size_t& first, std::size_t& last) {
  const auto address = reinterpret_cast<std::uintptr_t>(address_pointer);
  auto it = ranges_.upper_bound(address);
  if (it == ranges_.begin()) return nullptr;
  --it;
  if (address - it->first > it->second.size || size > it->second.size - (address - it->first)) return nullptr;
  if ((address - it->first) % granule_ != 0 || size % granule_ != 0) return nullptr;
  base = it->first;
  first = (address - base) / granule_;
  last = first + size / granule_;
  return &it->second;
}

int VmmReservations::commit(void* address, std::size_t size) noexcept {
  std::lock_guard lock(mutex_);
  std::uintptr_t base = 0;
  std::size_t first = 0, last = 0;
  Range* range = find(address, size, base, first, last);
  if (range == nullptr) return EINVAL;
  return commit_granules(base, *range, first, last);
}

int VmmReservations::commit_granules(std::uintptr_t base, Range& range, std::size_t first, std::size_t last) noexcept {
  const auto begin = range.state.begin();
  const std::size_t fresh = static_cast<std::size_t>(std::count(begin + first, begin + last, Granule::empty));
  if (fresh == 0) {  // granules shared with blocks already there, or orphans taken back
    std::replace(begin + first, begin + last, Granule::orphan, Granule::committed);
    return 0;
  }

  const DriverApi& api = *driver_api();
  CurrentDevice current(ordinal_);
  if (fresh * granule_ >= kCheckFreeFrom) {
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
    } else if (fresh * granule_ > free_bytes) {
      return ENOMEM;
    }
  }
  CUmemAccessDesc access[8];  // this device and up to 7 peers (cuMemSetAccess takes a list)
  const std::size_t accessors = std::min(accessors_.size(), std::size(access));
  for (std::size_t i = 0; i < accessors; ++i) {
    access[i] = {};
    access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[i].location.id = accessors_[i];
    access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  int error = 0;
  std::size_t run = last;  // start of the run of granules mapped but not yet given access
  const auto grant = [&](std::size_t end) {
    if (run == last || error != 0) return;
    CUresult r = api.mem_set_access(base + run * granule_, (end - run) * granule_, access, accessors);
    if (r != CUDA_SUCCESS && accessors > 1) {  // a peer refused: this device alone, as cudaMalloc's memory
      r = api.mem_set_access(base + run * granule_, (end - run) * granule_, access, 1);
    }
    if (r != CUDA_SUCCESS) error = errno_for(r);
    run = last;
  };
  for (std::size_t i = first; i < last && error == 0;) {
    if (range.state[i] != Granule::empty) {
      grant(i);
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < last && range.state[end] == Granule::empty && end - i < chunk_granules_) ++end;
    if (run == last) run = i;
    CUresult r = static_cast<CUresult>(map_chunk(base, range, i, end - i));
    if (r == CUDA_ERROR_OUT_OF_MEMORY && end - i > 1) {
      // The device may have the memory only in smaller pieces: a granule at a time.
      r = CUDA_SUCCESS;
      for (std::size_t j = i; j < end && r == CUDA_SUCCESS; ++j) r = static_cast<CUresult>(map_chunk(base, range, j, 1));
    }
    if (r != CUDA_SUCCESS) error = errno_for(r);
    i = end;
  }
  grant(last);
  if (error != 0) {
    (void)cudaGetLastError();
    release_pending(base, range, first, last);  // nothing new stays committed
    return error;
  }
  std::replace(begin + first, begin + last, Granule::pending, Granule::committed);
  std::replace(begin + first, begin + last, Granule::orphan, Granule::committed);
  committed_ += fresh * granule_;
  peak_ = std::max(peak_, committed_);
  return 0;
}

int VmmReservations::map_chunk(std::uintptr_t base, Range& range, std::size_t at, std::size_t count) noexcept {
  const DriverApi& api = *driver_api();
  const CUmemAllocationProp prop = device_memory(ordinal_);
  CUmemGenericAllocationHandle handle = 0;
  if (const CUresult r = api.mem_create(&handle, count * granule_, &prop, 0); r != CUDA_SUCCESS) return r;
  if (const CUresult r = api.mem_map(base + at * granule_, count * granule_, 0, handle, 0); r != CUDA_SUCCESS) {
    api.mem_release(handle);
    return r;
  }
  range.handle[at] = handle;
  range.length[at] = static_cast<std::uint32_t>(count);
  for (std::size_t i = at; i < at + count; ++i) {
    range.state[i] = Granule::pending;
    range.head[i] = static_cast<std::uint32_t>(at);
  }
  return CUDA_SUCCESS;
}

int VmmReservations::release_chunk(std::uintptr_t base, Range& range, std::size_t at) noexcept {
  const DriverApi& api = *driver_api();
  const std::size_t count = range.length[at];
  const CUresult unmapped = api.mem_unmap(base + at * granule_, count * granule_);
  const CUresult released = unmapped == CUDA_SUCCESS ? api.mem_release(range.handle[at]) : unmapped;
  if (released != CUDA_SUCCESS) {
    std::fprintf(stderr, "nuvec: warning: cannot release device memory of cuda:%d: %s\n", ordinal_,
                 driver_error(unmapped != CUDA_SUCCESS ? "cuMemUnmap" : "cuMemRelease", released).c_str());
    if (unmapped != CUDA_SUCCESS) return EIO;  // still mapped: still held
  }
  if (range.state[at] != Granule::pending) committed_ -= count * granule_;
  for (std::size_t i = at; i < at + count; ++i) range.state[i] = Granule::empty;
  range.handle[at] = 0;
  range.length[at] = 0;
  return released == CUDA_SUCCESS ? 0 : EIO;
}

void VmmReservations::release_pending(std::uintptr_t base, Range& range, std::size_t first, std::size_t last) noexcept {
  for (std::size_t i = first; i < last; ++i) {
    if (range.state[i] == Granule::pending && range.head[i] == i) release_chunk(base, range, i);
  }
}

bool VmmReservations::all_orphans(const Range& range, std::size_t at) {
  const auto begin = range.state.begin() + static_cast<std::ptrdiff_t>(at);
  return std::all_of(begin, begin + range.length[at], [](Granule g) { return g == Granule::orphan; });
}

void VmmReservations::wait_for_device() noexcept {
  if (cudaDeviceSynchronize() != cudaSuccess) (void)cudaGetLastError();
}

int VmmReservations::decommit(void* address, std::size_t size) noexcept {
  std::lock_guard lock(mutex_);
  std::uintptr_t base = 0;
  std::size_t first = 0, last = 0;
  Range* range = find(address, size, base, first, last);
  if (range == nullptr) return EINVAL;
  const auto begin = range->state.begin();
  if (std::none_of(begin + first, begin + last, [](Granule g) { return g == Granule::committed; })) return 0;
  std::replace(begin + first, begin + last, Granule::committed, Granule::orphan);
  // The chunks now orphaned whole go back; one still partly committed waits.
  std::vector<std::size_t> whole;
  try {
    for (std::size_t i = first; i < last;) {
      if (range->state[i] != Granule::orphan) {
        ++i;
        continue;
      }
      const std::size_t head = range->head[i];
      if (all_orphans(*range, head)) whole.push_back(head);
      i = head + range->length[head];
    }
  } catch (const std::bad_alloc&) {
    whole.clear();  // nothing given back this time: the chunks stay held as orphans
  }
  if (whole.empty()) return 0;
  CurrentDevice current(ordinal_);
  // Work queued before the block was freed may still read or write these
  // pages, and unmapping does not wait for it (as PyTorch found for its
  // expandable segments): the host waits for the whole device here. This is
  // the price of giving memory back; the cache's hits never pay it.
  wait_for_device();
  int error = 0;
  for (const std::size_t head : whole) {
    if (release_chunk(base, *range, head) != 0) error = EIO;
  }
  // A refusal leaves the range committed, as the caller will go on using it
  // (a cached extent stays cached): the granules released before it are
  // mapped again, where the device still has the memory.
  if (error != 0) commit_granules(base, *range, first, last);
  return error;
}

int VmmReservations::unreserve(void* base_address, std::size_t size) noexcept {
  std::lock_guard lock(mutex_);
  const auto base = reinterpret_cast<std::uintptr_t>(base_address);
  const auto it = ranges_.find(base);
  if (it == ranges_.end() || it->second.size != size) return EINVAL;
  Range& range = it->second;
  CurrentDevice current(ordinal_);
  const auto held = [](Granule g) { return g == Granule::committed || g == Granule::orphan; };
  if (std::any_of(range.state.begin(), range.state.end(), held)) {
    wait_for_device();
    int error = 0;
    for (std::size_t i = 0; i < range.state.size(); ++i) {
      if (held(range.state[i]) && range.head[i] == i && release_chunk(base, range, i) != 0) error = EIO;
    }
    if (error != 0) return error;
  }
  if (const CUresult r = driver_api()->mem_address_free(base, size); r != CUDA_SUCCESS) {
    std::fprintf(stderr, "nuvec: warning: cannot free reserved address space of cuda:%d: %s\n", ordinal_,
                 driver_error("cuMemAddressFree", r).c_str());
    return EIO;
  }
  ranges_.erase(it);
  return 0;
}

detail::Committed VmmReservations::committed() const {
  std::lock_guard lock(mutex_);
  return {committed_, peak_};
}

void VmmReservations::reset_committed_peak() noexcept {
  std::lock_guard lock(mutex_);
  peak_ = committed_;
}

}  // namespace nuvec::cuda
