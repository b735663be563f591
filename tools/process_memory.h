// What the operating system says about this process's memory (Linux
// /proc/self): the resident size and its peak, and how much of it is
// private — the cross-check docs/design.md asks for beside peak_with_mapped.
#pragma once

#include <cstdint>
#include <optional>

namespace nuvec::tool {

struct ProcessMemory {
  std::uint64_t vm_rss = 0;  // resident now (VmRSS), bytes
  std::uint64_t vm_hwm = 0;  // peak resident since start or the last reset (VmHWM)
  // From smaps_rollup: pages mapped by this process alone, clean (file pages
  // no other process maps: page cache, not copies) and dirty (written:
  // heap, buffers), and anonymous memory.
  std::uint64_t private_clean = 0;
  std::uint64_t private_dirty = 0;
  std::uint64_t anonymous = 0;
};

// Empty where /proc cannot be read (not Linux, or a sandbox without it).
std::optional<ProcessMemory> read_process_memory();

// Sets VmHWM back to the current VmRSS (writes 5 to /proc/self/clear_refs,
// Linux 4.0+). False where the kernel refuses; VmHWM then covers the whole
// process's life.
bool reset_peak_resident();

}  // namespace nuvec::tool
