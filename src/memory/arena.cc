#include "memory/arena.h"

#include <algorithm>
#include <iterator>
#include <new>

namespace nuvec::detail {

namespace {
constexpr std::size_t kSlab = 64;  // Block objects made at once when the spares run out
// Sizes of cached extents of a page and more up to this have a bin each.
constexpr std::size_t kBinnedBytes = std::size_t{32} << 20;

std::byte* start(const Block& b) { return static_cast<std::byte*>(b.address); }
std::byte* end(const Block& b) { return start(b) + b.size; }
}  // namespace

Arena::Arena(SizeClasses classes, const void* home) : classes_(classes), home_(home) {}

Arena::~Arena() {
  // Unlink every extent before the containers and the Blocks go.
  for (StreamIndexes& s : indexes_) {
    s.small.reset();
    s.pages.reset();
  }
  wired_.clear();
  for (HoleSet& holes : holes_) holes.clear();
  lru_.clear();
  reservations_.clear();
}

void Arena::prepare_slow(Stream stream, std::size_t spares) {
  if (find_index(ArenaKind::pages, stream) == nullptr) {
    indexes_.push_back({stream, std::make_unique<FreeIndex>(classes_.small_step, 256 * classes_.small_step),
                        std::make_unique<FreeIndex>(classes_.page, std::max(kBinnedBytes, classes_.page))});
  }
  while (spare_count_ < spares) refill();
}

void Arena::refill() {
  slabs_.push_back(std::make_unique<Block[]>(kSlab));
  Block* slab = slabs_.back().get();
  for (std::size_t i = 0; i < kSlab; ++i) recycle(slab[i]);
}

Block* Arena::before(Block& extent) {
  ExtentList& list = extent.reservation->extents;
  auto it = list.iterator_to(extent);
  return it == list.begin() ? nullptr : &*std::prev(it);
}

Block* Arena::after(Block& extent) {
  ExtentList& list = extent.reservation->extents;
  auto it = std::next(list.iterator_to(extent));
  return it == list.end() ? nullptr : &*it;
}

Block* Arena::find_wired_slow(std::size_t size, std::size_t headroom) const {
  constexpr std::size_t kMax = static_cast<std::size_t>(-1);
  const auto plus = [](std::size_t a, std::size_t b) { return a > kMax - b ? kMax : a + b; };
  const std::size_t bound = std::min({plus(size, size), plus(size, 2 * classes_.page), plus(headroom, 1)});
  const auto it = wired_.lower_bound(size, SizeKey{});
  return it == wired_.end() || it->size >= bound ? nullptr : const_cast<Block*>(&*it);
}

Block* Arena::find_cached_elsewhere(std::size_t size, Stream stream) const {
  const ArenaKind kind = kind_of(size);
  Block* best = nullptr;
  for (const StreamIndexes& s : indexes_) {
    if (s.stream == stream) continue;
    Block* extent = s.of(kind).best_fit(size);
    if (extent == nullptr) continue;
    if (best == nullptr || extent->size < best->size ||
        (extent->size == best->size &&
         (extent->binned_at > best->binned_at || (extent->binned_at == best->binned_at && s.stream < best->stream)))) {
      best = extent;
    }
  }
  return best;
}

Block* Arena::find_hole(std::size_t size) const {
  const HoleSet& holes = holes_of(kind_of(size));
  const auto it = holes.lower_bound(size, SizeKey{});
  return it == holes.end() ? nullptr : const_cast<Block*>(&*it);
}

Block& Arena::carve(Block& extent, std::size_t size) {
  if (extent.size == size) return extent;
  Block& live = spare();
  live.address = extent.address;
  live.size = size;
  live.wired = false;
  live.stream = extent.stream;
  live.freed_at = 0;
  live.binned_at = 0;
  live.reservation = extent.reservation;
  live.state = ExtentState::live;
  return live;
}

void Arena::discard(Block& extent, Block& live) {
  if (&live != &extent) recycle(live);
}

void Arena::commit(Block& extent, Block& live) {
  if (extent.state == ExtentState::cached) {
    FreeIndex& index = index_of(extent);
    index.erase(extent);
    bytes_ -= live.size;
    if (&live == &extent) {
      lru_.erase(lru_.iterator_to(extent));
      extent.state = ExtentState::live;
      return;
    }
    // The low part goes live; the extent keeps the rest (and its place in
    // the release order) and is indexed again at its new size.
    extent.reservation->extents.insert(ExtentList::s_iterator_to(extent), live);
    extent.address = end(live);
    extent.size -= live.size;
    extent.binned_at = ++clock_;
    index.insert(extent);
    return;
  }
  HoleSet& holes = holes_of(extent.reservation->kind);
  holes.erase(holes.iterator_to(extent));
  if (&live == &extent) {
    extent.state = ExtentState::live;
    return;
  }
  extent.reservation->extents.insert(ExtentList::s_iterator_to(extent), live);
  extent.address = end(live);
  extent.size -= live.size;
  holes.insert(extent);
}

void Arena::take_wired(Block& block) {
  wired_.erase(wired_.iterator_to(block));
  lru_.erase(lru_.iterator_to(block));
  bytes_ -= block.size;
  block.state = ExtentState::live;
}

Block& Arena::add_reservation(void* base, std::size_t size, ArenaKind kind) {
  auto reservation = std::make_unique<Reservation>();
  reservation->base = static_cast<std::byte*>(base);
  reservation->size = size;
  reservation->kind = kind;
  reservation->seq = next_seq_++;
  reservation->home = home_;
  Block& hole = spare();
  hole.address = base;
  hole.size = size;
  hole.wired = false;
  hole.stream = 0;
  hole.freed_at = 0;
  hole.binned_at = 0;
  hole.reservation = reservation.get();
  hole.state = ExtentState::hole;
  reservation->extents.push_back(hole);
  holes_of(kind).insert(hole);
  reservations_.push_back(std::move(reservation));
  return hole;
}

void Arena::remove_reservation(Reservation& reservation) {
  Block& hole = reservation.extents.front();
  holes_of(reservation.kind).erase(holes_of(reservation.kind).iterator_to(hole));
  reservation.extents.clear();
  recycle(hole);
  const auto it = std::find_if(reservations_.begin(), reservations_.end(),
                               [&](const std::unique_ptr<Reservation>& r) { return r.get() == &reservation; });
  reservations_.erase(it);
}

void Arena::put(Block& block) {
  block.state = ExtentState::cached;
  block.freed_at = ++clock_;
  bytes_ += block.size;
  lru_.push_back(block);
  if (block.wired) {
    wired_.insert(block);
    return;
  }
  FreeIndex& index = index_of(block);  // its neighbours' too, if they may merge
  ExtentList& list = block.reservation->extents;
  const auto it = ExtentList::s_iterator_to(block);
  if (it != list.begin()) {
    Block& left = *std::prev(it);
    if (mergeable(left, block)) {
      index.erase(left);
      lru_.erase(lru_.iterator_to(left));
      list.erase(ExtentList::s_iterator_to(left));
      block.address = left.address;
      block.size += left.size;
      recycle(left);
    }
  }
  if (const auto next = std::next(it); next != list.end()) {
    Block& right = *next;
    if (mergeable(right, block)) {
      index.erase(right);
      lru_.erase(lru_.iterator_to(right));
      list.erase(next);
      block.size += right.size;
      recycle(right);
    }
  }
  block.binned_at = block.freed_at;
  index.insert(block);
}

std::pair<void*, std::size_t> Arena::decommit_range(const Block& extent, std::size_t bytes) const {
  auto& self = const_cast<Block&>(extent);
  const std::byte* first = end(extent) - bytes;
  // A part's left neighbour is the rest of its extent, which stays cached.
  const Block* left = bytes == extent.size ? before(self) : nullptr;
  const Block* right = after(self);
  const std::byte* hole_start = left != nullptr && left->state == ExtentState::hole ? start(*left) : first;
  const std::byte* hole_end = right != nullptr && right->state == ExtentState::hole ? end(*right) : end(extent);
  const auto down = [&](const std::byte* p) {
    return reinterpret_cast<std::uintptr_t>(p) & ~(std::uintptr_t{classes_.page} - 1);
  };
  const auto up = [&](const std::byte* p) {
    return (reinterpret_cast<std::uintptr_t>(p) + classes_.page - 1) & ~(std::uintptr_t{classes_.page} - 1);
  };
  const std::uintptr_t from = std::max(down(first), up(hole_start));
  const std::uintptr_t to = std::min(up(end(extent)), down(hole_end));
  if (from >= to) return {nullptr, 0};
  return {reinterpret_cast<void*>(from), to - from};
}

bool Arena::prepare_cut() noexcept {
  if (spare_count_ > 0) return true;
  try {
    refill();
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

void Arena::cut_high(Block& extent, std::size_t bytes) {
  FreeIndex& index = index_of(extent);
  index.erase(extent);
  extent.size -= bytes;
  bytes_ -= bytes;
  extent.binned_at = ++clock_;
  index.insert(extent);
  HoleSet& holes = holes_of(extent.reservation->kind);
  if (Block* right = after(extent); right != nullptr && right->state == ExtentState::hole) {
    holes.erase(holes.iterator_to(*right));  // re-keyed: its size grows
    right->address = end(extent);
    right->size += bytes;
    holes.insert(*right);
    return;
  }
  Block& hole = spare();
  hole.address = end(extent);
  hole.size = bytes;
  hole.wired = false;
  hole.stream = 0;
  hole.freed_at = 0;
  hole.binned_at = 0;
  hole.reservation = extent.reservation;
  hole.state = ExtentState::hole;
  extent.reservation->extents.insert(std::next(ExtentList::s_iterator_to(extent)), hole);
  holes.insert(hole);
}

void Arena::evict(Block& extent) {
  if (extent.wired) {
    wired_.erase(wired_.iterator_to(extent));
  } else {
    index_of(extent).erase(extent);
  }
  lru_.erase(lru_.iterator_to(extent));
  bytes_ -= extent.size;
}

void Arena::make_hole(Block& extent) {
  extent.state = ExtentState::hole;
  HoleSet& holes = holes_of(extent.reservation->kind);
  ExtentList& list = extent.reservation->extents;
  if (Block* left = before(extent); left != nullptr && left->state == ExtentState::hole) {
    holes.erase(holes.iterator_to(*left));
    list.erase(list.iterator_to(*left));
    extent.address = left->address;
    extent.size += left->size;
    recycle(*left);
  }
  if (Block* right = after(extent); right != nullptr && right->state == ExtentState::hole) {
    holes.erase(holes.iterator_to(*right));
    list.erase(list.iterator_to(*right));
    extent.size += right->size;
    recycle(*right);
  }
  extent.stream = 0;
  holes.insert(extent);
}

void Arena::unwired(Block& extent) {
  wired_.erase(wired_.iterator_to(extent));
  extent.binned_at = ++clock_;
  index_of(extent).insert(extent);
}

}  // namespace nuvec::detail
