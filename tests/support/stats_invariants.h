// The relations between MemoryStats fields that hold in every snapshot.
#pragma once

#include <string>

#include "nuvec/memory_stats.h"

namespace nuvec_test {

// Each violated relation, "; "-separated; empty when the snapshot is sound.
inline std::string invariant_violations(const nuvec::MemoryStats& s) {
  std::string out;
  auto check = [&](bool ok, const char* relation) {
    if (!ok) {
      out += relation;
      out += "; ";
    }
  };
  check(s.active_with_mapped == s.active + s.mapped, "active_with_mapped == active + mapped");
  check(s.peak >= s.active, "peak >= active");
  check(s.peak_with_mapped >= s.active + s.mapped, "peak_with_mapped >= active + mapped");
  check(s.peak_with_mapped >= s.peak, "peak_with_mapped >= peak");
  check(s.active + s.mapped <= s.memory_limit, "active + mapped <= memory_limit");
  // The cache yields before new memory is taken, and a hit or a free moves
  // bytes between active and cache, so this holds at every instant.
  check(s.active + s.mapped + s.cache <= s.memory_limit,
        "active + mapped + cache <= memory_limit");
  check(s.cache <= s.cache_limit, "cache <= cache_limit");
  check(s.wired <= s.wired_limit, "wired <= wired_limit");
  check(s.wired_mapped <= s.wired, "wired_mapped <= wired");
  check(s.wired_mapped <= s.mapped, "wired_mapped <= mapped");
  check(s.wired <= s.active + s.cache + s.mapped, "wired <= active + cache + mapped");
  return out;
}

}  // namespace nuvec_test
