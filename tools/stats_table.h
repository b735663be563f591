// MemoryStats for people: aligned tables and one-line summaries of changes.
// Field names and order come from nuvec::for_each_field, never from the
// struct's layout, so new fields show up here by themselves.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/memory_stats.h"

namespace nuvec::tool {

struct Field {
  std::string_view name;
  std::uint64_t value;
};

// Every field of `stats`, in for_each_field order.
std::vector<Field> fields_of(const MemoryStats& stats);

// system_allocations is a count; every other field is bytes.
bool is_count(std::string_view field);
// The *_limit fields, where SIZE_MAX means "unlimited".
bool is_limit(std::string_view field);

// The value for reading: "1.5 GiB", "unlimited", or a plain count.
std::string format_value(std::string_view field, std::uint64_t value);
// A signed change: "+1.0 MiB", "-3", or "0 B → 64.0 MiB" for limits.
std::string format_change(std::string_view field, std::uint64_t before, std::uint64_t after);

// A table of every field: name, exact value and readable value.
std::string stats_table(const MemoryStats& stats);

// A table of the fields that differ between `before` and `after`, plus those in
// `always` (in field order): name, before, after, change.
std::string changes_table(const MemoryStats& before, const MemoryStats& after,
                          std::span<const std::string_view> always);

// "active -1.0 MiB, cache +1.0 MiB, system_allocations unchanged (3)": the
// fields that changed (active_with_mapped, which is active + mapped, left out)
// and, for those in `always` that did not, "unchanged". "no change" if none.
std::string summarize_changes(const MemoryStats& before, const MemoryStats& after,
                              std::span<const std::string_view> always);

}  // namespace nuvec::tool
