#include "memory/block_cache.h"

#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "memory/arena_cache.h"
#include "memory/whole_block_cache.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::detail {

std::unique_ptr<BlockCache> make_block_cache(Backend& backend, CacheOwner& owner, Residency& residency,
                                             SizeClasses classes) {
  if (ReservationSource* reservations = backend.reservations()) {
    return std::make_unique<ArenaCache>(owner, residency, backend.streams(), *reservations, classes);
  }
  BlockSource* blocks = backend.blocks();
  if (blocks == nullptr) {
    throw InvalidArgument(fmt::format("device '{}': its backend supplies neither reservations nor blocks",
                                      backend.name()));
  }
  return std::make_unique<WholeBlockCache>(owner, residency, backend.streams(), *blocks, classes);
}

void warn_release_refused(int error) noexcept {
  std::fprintf(stderr, "nuvec: warning: the system refused to release a cached block (%s); it stays cached\n",
               std::strerror(error));
}

void refuse_wiring(std::string_view how_to_lock_more, std::size_t bytes, int error,
                   const std::filesystem::path& path) {
  throw IoError(fmt::format("cannot wire {} ({}): the system would not lock more memory; {}, or lower the wired "
                            "limit (Device::set_wired_limit, NUVEC_WIRED_LIMIT)",
                            format_bytes(bytes), std::strerror(error), how_to_lock_more),
                path, error);
}

}  // namespace nuvec::detail
