#include "memory/residency.h"

#include <algorithm>

namespace nuvec::detail {

void Residency::count_wired(Resident& item, bool wired) {
  item.wired = wired;
  if (wired) {
    wired_ += item.size;
    if (item.is_mapping()) wired_mapped_ += item.size;
  } else {
    wired_ -= item.size;
    if (item.is_mapping()) wired_mapped_ -= item.size;
  }
  if (observer_ != nullptr) observer_(observer_context_, item, wired);
}

int Residency::wire_new(Resident& item) {
  if (item.wired || !wirable(item) || !fits(item.size)) return 0;
  if (const int error = item.wire(wiring_of(item)); error != 0) return error;
  count_wired(item, true);
  return 0;
}

void Residency::append(Resident& item) {
  if (!wirable(item)) return;
  order_.push_back(item);
  if (!item.wired) ++waiting_;
}

void Residency::remove(Resident& item) {
  if (!wirable(item)) return;
  order_.erase(order_.iterator_to(item));
  if (!item.wired) --waiting_;
}

void Residency::unwire_cached(Resident& item) noexcept {
  if (!item.wired) return;
  item.unwire(wiring_of(item));
  count_wired(item, false);
}

void Residency::forget_wired(Resident& item) noexcept {
  if (item.wired) count_wired(item, false);
}

void Residency::unwire_newest(std::size_t target) noexcept {
  for (auto it = order_.rbegin(); it != order_.rend() && wired_ > target; ++it) {
    if (!it->wired) continue;
    it->unwire(wiring_of(*it));
    count_wired(*it, false);
    ++waiting_;
  }
}

bool Residency::hold_staging(std::size_t bytes) {
  if (bytes > limit_ || wired_ > limit_ - bytes) return false;
  wired_ += bytes;
  staging_ += bytes;
  return true;
}

void Residency::release_staging(std::size_t bytes) noexcept {
  bytes = std::min(bytes, staging_);
  wired_ -= bytes;
  staging_ -= bytes;
}

int Residency::promote(bool strict) {
  if (waiting_ == 0) return 0;
  std::vector<Resident*> wired_now;  // for undoing a strict promotion
  for (Resident& item : order_) {
    if (item.wired || !fits(item.size)) continue;
    if (const int error = item.wire(wiring_of(item)); error != 0) {
      if (!strict) continue;
      for (Resident* done : wired_now) {
        done->unwire(wiring_of(*done));
        count_wired(*done, false);
        ++waiting_;
      }
      return error;
    }
    count_wired(item, true);
    --waiting_;
    if (strict) wired_now.push_back(&item);
  }
  return 0;
}

}  // namespace nuvec::detail
