// MemoryStats: one device allocator's figures, as a plain value.
//
// The field meanings are the contract in docs/memory-stats.md (from docs/design.md).
// All figures are bytes except `system_allocations`, which is a count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <type_traits>

#include <fmt/ostream.h>

namespace nuvec {

struct MemoryStats {
  // Bytes in live buffers, each counted at the size of the block that holds it
  // (allocation_size(len), or a slightly larger cached block that served it).
  std::size_t active = 0;
  // Highest `active` since creation or the last reset_peak().
  std::size_t peak = 0;
  // active + mapped: everything the allocator holds for live arrays.
  std::size_t active_with_mapped = 0;
  // Highest active + mapped since creation or the last reset_peak():
  // the one peak metric (compare with MLX get_peak_memory()).
  std::size_t peak_with_mapped = 0;
  // Bytes of freed buffers held for reuse (never in `active`).
  std::size_t cache = 0;
  // Hard limit on active + mapped; passing it raises OutOfMemory.
  std::size_t memory_limit = 0;
  // The cache is trimmed to at most this many bytes.
  std::size_t cache_limit = 0;
  // Allocations obtained from the system so far: blocks, or on the CPU
  // address-space reservations that blocks are carved from (see
  // docs/memory-stats.md).
  std::uint64_t system_allocations = 0;
  // Buffers and mapped files are kept resident (locked) up to this many bytes.
  std::size_t wired_limit = 0;
  // Bytes currently wired, mapped files included.
  std::size_t wired = 0;
  // Bytes of live memory-mapped files, each rounded up with mapping_size().
  std::size_t mapped = 0;
  // The part of `wired` that belongs to mapped files.
  std::size_t wired_mapped = 0;

  friend bool operator==(const MemoryStats&, const MemoryStats&) = default;
};

// Calls f(name, field) for every field, in declaration order, with a
// reference to the field (const when `s` is). The single list of field
// names: printing, JSON and tables all go through it.
template <class Stats, class F>
  requires std::is_same_v<std::remove_const_t<Stats>, MemoryStats>
void for_each_field(Stats& s, F&& f) {
  f("active", s.active);
  f("peak", s.peak);
  f("active_with_mapped", s.active_with_mapped);
  f("peak_with_mapped", s.peak_with_mapped);
  f("cache", s.cache);
  f("memory_limit", s.memory_limit);
  f("cache_limit", s.cache_limit);
  f("system_allocations", s.system_allocations);
  f("wired_limit", s.wired_limit);
  f("wired", s.wired);
  f("mapped", s.mapped);
  f("wired_mapped", s.wired_mapped);
}

// One line, `name=value` pairs in field order: "MemoryStats{active=1024, ...}".
std::ostream& operator<<(std::ostream& os, const MemoryStats& s);

// A JSON object with the field names as keys and integers as values.
std::string to_json(const MemoryStats& s);

}  // namespace nuvec

template <>
struct fmt::formatter<nuvec::MemoryStats> : fmt::ostream_formatter {};
