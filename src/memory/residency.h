// Residency: which live buffers and mappings are wired (kept resident), in
// creation order, within the wired limit; and page-locked memory that is
// neither (a GPU upload's staging), which counts in `wired` too. See
// docs/allocator-policy.md and docs/cuda.md. Not thread-safe: the
// Allocator's lock guards it.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include <boost/intrusive/list.hpp>

#include "memory/backend.h"
#include "memory/resident.h"

namespace nuvec::detail {

class Residency {
 public:
  // The limit starts at the backend's default (0 on the CPU: nothing is
  // wired until asked).
  explicit Residency(Backend& backend)
      : buffers_(backend.buffer_wiring()), mappings_(backend.mapping_wiring()), limit_(backend.default_wired_limit()) {}
  Residency(const Residency&) = delete;
  Residency& operator=(const Residency&) = delete;
  ~Residency() { order_.clear(); }

  std::size_t limit() const { return limit_; }
  std::size_t wired() const { return wired_; }
  std::size_t wired_mapped() const { return wired_mapped_; }

  // Would a new item of `bytes` be wired? (It is, unless the system refuses.)
  bool fits(std::size_t bytes) const { return wired_ + bytes <= limit_; }

  // Wires `item` (not yet in the order) if it fits and is not wired already.
  // Returns 0 or the errno of a refused wiring; the item is unchanged then.
  int wire_new(Resident& item);
  // Appends an item (wired or not) to the end of the order.
  void append(Resident& item);
  // Takes a live item out of the order; a wired block stays wired (cached).
  void remove(Resident& item);

  // Unwires an item that is out of the order (a cached block).
  void unwire_cached(Resident& item) noexcept;
  // Forgets the wiring of an item the system is about to release.
  void forget_wired(Resident& item) noexcept;
  // Unwires live items, newest first, while wired > target.
  void unwire_newest(std::size_t target) noexcept;

  // Wires waiting items, oldest first, each that fits. With `strict`, the
  // first refused wiring undoes this call's wiring and returns its errno;
  // otherwise refused items keep waiting. Returns 0 on success.
  int promote(bool strict);

  void set_limit(std::size_t limit) { limit_ = limit; }

  // The wiring of buffers (null where they are always resident).
  Wiring* buffer_wiring() const { return buffers_; }
  // For messages: how to get more wired of buffers (`mapping` false) or of
  // mapped files.
  std::string_view how_to_lock_more(bool mapping) const {
    return (mapping || buffers_ == nullptr ? mappings_ : *buffers_).how_to_lock_more();
  }

  // Staging: page-locked host memory that belongs to no item (a GPU
  // upload's staging buffers), counted in `wired` while its user holds it.
  // hold_staging takes `bytes` if they fit under the limit and returns
  // false, changing nothing, if they do not; items waiting to be wired wait
  // meanwhile; release_staging gives them back (the caller then promotes
  // waiting items, as after an unmap). Staging cannot be unwired: a limit
  // lowered below it holds again once the staging is released.
  bool hold_staging(std::size_t bytes);
  void release_staging(std::size_t bytes) noexcept;

  // Called after every change of an item's wiring (for the event trace).
  using Observer = void (*)(void* context, const Resident& item, bool wired);
  void observe(Observer observer, void* context) {
    observer_ = observer;
    observer_context_ = context;
  }

 private:
  using OrderList =
      boost::intrusive::list<Resident, boost::intrusive::member_hook<Resident, ListHook, &Resident::order_hook>>;

  void count_wired(Resident& item, bool wired);
  // Items the backend can wire; the others never enter the order.
  bool wirable(const Resident& item) const { return item.is_mapping() || buffers_ != nullptr; }
  Wiring& wiring_of(const Resident& item) const { return item.is_mapping() ? mappings_ : *buffers_; }

  Wiring* buffers_;  // null: buffers are always resident
  Wiring& mappings_;
  OrderList order_;
  std::size_t limit_ = 0;
  std::size_t wired_ = 0;
  std::size_t wired_mapped_ = 0;
  std::size_t staging_ = 0;  // part of wired_
  std::size_t waiting_ = 0;  // live items not wired
  Observer observer_ = nullptr;
  void* observer_context_ = nullptr;
};

}  // namespace nuvec::detail
