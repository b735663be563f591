// Block: one piece of memory the allocator took from its backend. It lives
// from the cache miss that created it until it is released to the system;
// a Buffer refers to it while live, the BufferCache holds it between uses.
#pragma once

#include <cstdint>

#include <boost/intrusive/set_hook.hpp>

#include "memory/resident.h"

namespace nuvec::detail {

using SetHook = boost::intrusive::set_member_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>>;

struct Block final : Resident {
  Block(void* address_, std::size_t size_) : address(address_) { size = size_; }

  int wire(Backend& backend) override { return backend.wire(address, size); }
  void unwire(Backend& backend) noexcept override { backend.unwire(address, size); }
  bool is_mapping() const override { return false; }
  std::uint64_t trace_id() const override { return reinterpret_cast<std::uintptr_t>(address); }

  void* address;
  Stream stream = 0;           // where it was last used (see Backend::order_after)
  std::uint64_t freed_at = 0;  // cache sequence number: larger is more recent
  ListHook bin_hook;           // BufferCache: its size's bin, most recent first
  SetHook large_hook;          // BufferCache: blocks too large for a bin, by size
  ListHook lru_hook;           // BufferCache: least recently freed first
};

}  // namespace nuvec::detail
