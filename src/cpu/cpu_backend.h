// The CPU backend: address-space reservations (anonymous mappings whose
// pages come on first touch and go back with madvise) for the allocator's
// arena, read-only shared file mappings, mlock/munlock for wiring. Without
// reservations (an option, for tests of that policy): anonymous mappings for
// page-sized and larger buffers, 256-byte-aligned heap memory below a page.
#pragma once

#include <cstddef>
#include <memory>

#include "memory/backend.h"
#include "cpu/system_calls.h"

namespace nuvec::cpu {

struct CpuBackendOptions {
  // Blocks come from reservations (the arena). false: each block is its own
  // allocation, the policy of backends that cannot reserve.
  bool reservations = true;
  // The size of a reservation; a larger request gets one of its own size.
  // Halved on refusal (an address-space limit), down to the request.
  std::size_t reservation_bytes = std::size_t{64} << 30;
  // Blocks up to this size are cached per thread (docs/allocator-policy.md,
  // "Thread caches"); 0: none, every request goes to the shared cache, as
  // the policy's reference model does.
  std::size_t thread_cache_max = 0;
};

// What Device::cpu() and Device::create_cpu() use: thread caches up to
// kThreadCacheMax, or NUVEC_THREAD_CACHE bytes (0 turns them off).
inline constexpr std::size_t kThreadCacheMax = std::size_t{16} << 20;
CpuBackendOptions device_options();

std::unique_ptr<detail::Backend> make_backend(std::shared_ptr<SystemCalls> calls = SystemCalls::real(),
                                              CpuBackendOptions options = {});

}  // namespace nuvec::cpu
