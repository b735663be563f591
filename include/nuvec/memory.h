// Free functions about sizes and the machine, shared by every device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nuvec {

// The system page size (sysconf(_SC_PAGESIZE)), read once.
std::size_t page_size();

// Bytes of memory this process can use: the lower of MemTotal and the
// cgroup's memory limit (v2 memory.max along the cgroup path, or v1
// memory.limit_in_bytes). 0 where neither can be read.
std::size_t physical_memory();

// The size class a CPU buffer of `len` bytes is counted at: multiples of 256
// bytes up to one page, whole pages beyond. 0 for 0. Empty on overflow.
std::optional<std::size_t> allocation_size(std::size_t len);

// What a memory-mapped file of `len` bytes counts in `mapped`: its length
// rounded up to whole pages. Throws InvalidArgument on overflow.
std::size_t mapping_size(std::uint64_t len);

// Parses a byte count as users write it: plain bytes ("4096"), binary units
// ("512MiB", "8GiB", "64K", "2G" — single letters are binary) or decimal units
// ("1.5GB", "300MB"). Case-insensitive units, optional space before the unit.
// Throws InvalidArgument naming `what` (e.g. "NUVEC_MEMORY_LIMIT") on a
// malformed, negative or overflowing value.
std::size_t parse_size(std::string_view text, std::string_view what = "size");

// Human-readable bytes: "1023 B", "1.0 KiB", "1.5 GiB".
std::string format_bytes(std::uint64_t bytes);

}  // namespace nuvec
