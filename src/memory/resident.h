// Resident: anything the residency order can wire — a buffer's block or a
// file mapping. The order is an intrusive list, so wiring costs no
// bookkeeping allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include <boost/intrusive/list_hook.hpp>

#include "memory/backend.h"

namespace nuvec::detail {

using ListHook = boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>>;

struct Resident {
  virtual ~Resident() = default;
  // Locks the item's memory; 0 or the errno of the failure.
  virtual int wire(Wiring& wiring) = 0;
  virtual void unwire(Wiring& wiring) noexcept = 0;
  virtual bool is_mapping() const = 0;
  // What names it in a trace: a buffer's address, a mapping's identity.
  virtual std::uint64_t trace_id() const = 0;

  std::size_t size = 0;  // bytes it counts: the block size, or mapping_size
  bool wired = false;
  ListHook order_hook;  // position in the residency order while live
};

}  // namespace nuvec::detail
