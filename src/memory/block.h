// Block: one piece of memory a live buffer can hold. Without an arena it is
// a whole allocation from the backend, alive from the cache miss that made
// it until it is released to the system; a Buffer refers to it while live,
// the BufferCache holds it between uses. In an arena (memory/arena.h) it is
// one extent of a reservation — live, cached or a hole — and extents are
// split and merged as buffers come and go.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <boost/intrusive/set_hook.hpp>

#include "memory/resident.h"

namespace nuvec::detail {

using SetHook = boost::intrusive::set_member_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>>;

struct Reservation;
class ThreadCache;

// What an arena extent is: in a live buffer; freed and kept committed for
// reuse (counted in `cache`); or a hole, address space whose pages went back
// to the system or were never touched (counted nowhere).
enum class ExtentState : std::uint8_t { live, cached, hole };

struct Block final : Resident {
  Block() = default;
  Block(void* address_, std::size_t size_) : address(address_) { size = size_; }

  int wire(Wiring& wiring) override { return wiring.wire(address, size); }
  void unwire(Wiring& wiring) noexcept override { wiring.unwire(address, size); }
  bool is_mapping() const override { return false; }
  std::uint64_t trace_id() const override { return reinterpret_cast<std::uintptr_t>(address); }

  void* address = nullptr;
  Stream stream = 0;           // where it was last used (see StreamOrder::order_after)
  std::uint64_t freed_at = 0;  // cache sequence number: larger is more recent
  // Arena only.
  Reservation* reservation = nullptr;  // the reservation it lies in
  std::uint64_t binned_at = 0;         // when it last entered a free index: larger is more recent
  ExtentState state = ExtentState::live;
  // Live and handed out while thread caches served its size: the thread
  // cache whose live list holds it (memory/thread_cache.h) instead of the
  // residency order; null otherwise. Written under that cache's lock.
  std::atomic<ThreadCache*> listed_in{nullptr};

  ListHook bin_hook;      // BufferCache: its size's bin, most recent first
  Block* bin_next = nullptr;    // FreeIndex: its size's bin, most recent first (a list
  Block** bin_prev = nullptr;   // of one pointer per bin: the pointer that points here); the arena's spares
  SetHook large_hook;     // BufferCache/FreeIndex: blocks too large for a bin; arena: wired cached blocks, holes
  ListHook lru_hook;      // BufferCache or arena: least recently freed first
  ListHook address_hook;  // arena: its reservation's extents, in address order
};

// Orders a size against blocks, for lower_bound on a set ordered by size:
// before every block of that size.
struct SizeKey {
  bool operator()(std::size_t size, const Block& b) const { return size < b.size; }
  bool operator()(const Block& b, std::size_t size) const { return b.size < size; }
};

// Cached blocks by size, the most recently freed first among equals.
struct BySizeThenRecentlyFreed {
  bool operator()(const Block& a, const Block& b) const {
    return a.size != b.size ? a.size < b.size : a.freed_at > b.freed_at;
  }
};

}  // namespace nuvec::detail
