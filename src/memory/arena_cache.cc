#include "memory/arena_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "nuvec/memory.h"

namespace nuvec::detail {

ArenaCache::ArenaCache(CacheOwner& owner, Residency& residency, StreamOrder* streams, ReservationSource& source,
                       SizeClasses classes, bool home_of_its_blocks)
    : BlockCache(owner, residency, streams),
      source_(source),
      classes_(classes),
      arena_(classes, home_of_its_blocks ? this : nullptr) {
  count_bytes_in(arena_.bytes_counter());
}

Block& ArenaCache::take(Block& extent, std::size_t size, Stream stream) {
  const bool cached = extent.state == ExtentState::cached;  // a hole's memory no stream used
  Block& block = arena_.carve(extent, size);
  if (const int error = residency_.wire_new(block); error != 0) {
    arena_.discard(extent, block);
    refuse_wiring(residency_.how_to_lock_more(false), size, error);
  }
  arena_.commit(extent, block);
  if (cached) {
    hand_over(block, stream);
  } else {
    block.stream = stream;
  }
  return block;
}

Block& ArenaCache::take_new(std::size_t len, std::size_t size, Stream stream) {
  prepare(size, stream);
  bool fresh = false;
  Block* hole = arena_.find_hole(size);
  if (hole == nullptr) hole = &reserve(len, size, fresh);
  Reservation* const made = fresh ? hole->reservation : nullptr;
  // The block's pages are committed before it is handed out (a GPU maps
  // physical memory there; the CPU's pages come on first touch). A device
  // out of memory while we hold some: give it all back (after the device
  // has finished with it) and commit once more, from the hole that fits
  // best now (the released extents became holes, maybe merged with ours).
  int error = commit_pages(*hole, size);
  if (error == ENOMEM && !arena_.empty()) {
    synchronize();
    release_all();
    hole = arena_.find_hole(size);  // never null: ours is still there, or part of a larger one
    error = commit_pages(*hole, size);
  }
  if (error != 0) {
    return_if_unused(made);
    owner_.refuse_system(len, size, error);
  }
  try {
    Block& block = take(*hole, size, stream);
    return_if_unused(made);  // served from an older one after the release
    return block;
  } catch (...) {
    // Wiring failed: a reservation made for this take goes back too. (Pages
    // committed above stay committed for the hole's next block; no backend
    // both commits explicitly and wires buffers.)
    return_if_unused(made);
    throw;
  }
}

int ArenaCache::commit_pages(const Block& hole, std::size_t size) noexcept {
  const std::uintptr_t page = classes_.page;
  const auto start = reinterpret_cast<std::uintptr_t>(hole.address);
  const std::uintptr_t from = start & ~(page - 1);
  const std::uintptr_t to = (start + size + page - 1) & ~(page - 1);
  return source_.commit(reinterpret_cast<void*>(from), to - from);
}

void ArenaCache::return_if_unused(Reservation* reservation) noexcept {
  if (reservation == nullptr || !reservation->unused()) return;
  if (source_.unreserve(reservation->base, reservation->size) == 0) arena_.remove_reservation(*reservation);
}

Block& ArenaCache::reserve(std::size_t len, std::size_t size, bool& fresh) {
  const ArenaKind kind = arena_.kind_of(size);
  ReservationSource::Reservation r;
  int error = source_.reserve(size, kind == ArenaKind::pages, &r);
  if (error != 0) {
    const auto& all = arena_.reservations();
    const bool unused = std::any_of(all.begin(), all.end(), [](const auto& x) { return x->unused(); });
    if (error == ENOMEM && (!arena_.empty() || unused)) {
      // The system is out of memory (or address space) while we hold some:
      // give it all back (after the device has finished with it), then try
      // the holes and the system once more.
      synchronize();
      release_all();
      if (Block* hole = arena_.find_hole(size)) return *hole;
      unreserve_unused();
      error = source_.reserve(size, kind == ArenaKind::pages, &r);
    }
    if (error != 0) owner_.refuse_system(len, size, error);
  }
  fresh = true;
  return arena_.add_reservation(r.base, r.size, kind);
}

void ArenaCache::unreserve_unused() noexcept {
  const auto& all = arena_.reservations();
  for (std::size_t i = all.size(); i-- > 0;) {
    Reservation& r = *all[i];
    if (!r.unused()) continue;
    if (const int error = source_.unreserve(r.base, r.size); error != 0) {
      std::fprintf(stderr, "nuvec: warning: the system refused to return a reservation of %s (%s)\n",
                   format_bytes(r.size).c_str(), std::strerror(error));
      continue;
    }
    arena_.remove_reservation(r);
  }
}

int ArenaCache::release(Block& extent, std::size_t wanted) noexcept {
  if (extent.wired || wanted >= extent.size) return release_whole(extent);
  const std::size_t step = arena_.step_of(extent);
  const std::size_t bytes = (wanted + step - 1) & ~(step - 1);  // at most its size, a multiple of step
  if (bytes == extent.size || !arena_.prepare_cut()) return release_whole(extent);
  return release_high(extent, bytes);
}

int ArenaCache::release_high(Block& extent, std::size_t bytes) noexcept {
  const auto [address, length] = arena_.decommit_range(extent, bytes);
  if (length != 0) {
    if (const int error = source_.decommit(address, length); error != 0) return error;  // still whole and cached
  }
  std::byte* const part = static_cast<std::byte*>(extent.address) + (extent.size - bytes);
  arena_.cut_high(extent, bytes);
  owner_.note_release(reinterpret_cast<std::uintptr_t>(part), bytes);  // the trace names the range released
  return 0;
}

int ArenaCache::release_whole(Block& extent) noexcept {
  const auto [address, length] = arena_.decommit_range(extent);
  const bool wired = extent.wired;
  Wiring* const wiring = wired ? residency_.buffer_wiring() : nullptr;
  if (wired) extent.unwire(*wiring);  // locked pages cannot be decommitted
  if (length != 0) {
    if (const int error = source_.decommit(address, length); error != 0) {
      // Still committed: it stays cached, locked again if it was.
      if (wired && extent.wire(*wiring) != 0) {
        residency_.forget_wired(extent);
        arena_.unwired(extent);
      }
      return error;
    }
  }
  const std::uint64_t id = extent.trace_id();
  const std::size_t size = extent.size;
  arena_.evict(extent);
  residency_.forget_wired(extent);
  arena_.make_hole(extent);
  owner_.note_release(id, size);
  return 0;
}

void ArenaCache::unwire_newest(std::size_t target) noexcept {
  // An unlocked extent becomes an ordinary cached extent.
  arena_.for_each_newest_first([&](Block& block) {
    if (!block.wired || residency_.wired() <= target) return;
    residency_.unwire_cached(block);
    arena_.unwired(block);
  });
}

void ArenaCache::release_everything() noexcept {
  // Unreserving a reservation returns everything in it, locks included.
  for (const std::unique_ptr<Reservation>& r : arena_.reservations()) {
    if (const int error = source_.unreserve(r->base, r->size); error != 0) {
      std::fprintf(stderr, "nuvec: warning: the system refused to return a reservation of %s (%s)\n",
                   format_bytes(r->size).c_str(), std::strerror(error));
    }
  }
}

Reserved ArenaCache::reserved() const {
  Reserved r;
  for (const std::unique_ptr<Reservation>& reservation : arena_.reservations()) {
    ++r.count;
    r.bytes += reservation->size;
  }
  return r;
}

}  // namespace nuvec::detail
