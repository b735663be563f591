// Replaying a trace: its allocations and frees (same sizes, same order, same
// overlap), mappings, limit changes and peak resets, applied to a device, and
// what the device held while doing it. Also the same allocate/free sequence on
// glibc malloc, for a side-by-side ratio. The trace layer's API (nuvec_trace,
// nuvec::trace in the package); `nuvec replay` is built on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "nuvec/device.h"
#include "nuvec/memory_stats.h"
#include "nuvec/trace.h"

namespace nuvec {

struct ReplayOptions {
  // Replaces the trace's memory limit: it is set before the first event and
  // the trace's memory_limit events are skipped.
  std::optional<std::size_t> memory_limit;
  // After each replayed event, compare device.memory() with the recorded
  // statistics (traces a nuvec device recorded, replayed on a fresh device).
  bool verify = false;
  // Where the files that map events map are made (one per distinct size,
  // removed afterwards); empty: the system's temp directory.
  std::filesystem::path scratch_dir;
  // Names the trace in error messages.
  std::filesystem::path trace_path;
};

// Allocate and free counts and the wall time they took, each operation timed
// alone (steady clock, so each includes about one clock read).
struct OperationTimes {
  std::uint64_t allocates = 0;
  std::uint64_t frees = 0;
  std::uint64_t allocate_ns = 0;
  std::uint64_t free_ns = 0;

  double ns_per_allocate() const { return allocates == 0 ? 0 : double(allocate_ns) / double(allocates); }
  double ns_per_free() const { return frees == 0 ? 0 : double(free_ns) / double(frees); }
  double ns_per_op() const {
    const std::uint64_t ops = allocates + frees;
    return ops == 0 ? 0 : double(allocate_ns + free_ns) / double(ops);
  }
};

// The first difference between the device and the recorded statistics.
struct StatsMismatch {
  std::uint64_t seq = 0;  // the event whose recorded statistics differ
  std::string field;
  std::uint64_t expected = 0;  // recorded
  std::uint64_t got = 0;       // the replaying device's
};

struct ReplayReport {
  std::uint64_t events = 0;       // in the trace
  std::uint64_t allocations = 0;  // allocate events replayed, refused ones included
  std::uint64_t frees = 0;
  std::uint64_t mappings = 0;
  std::uint64_t refusals = 0;  // allocations and mappings the device refused (OutOfMemory)
  // Highest active + cache after any event: what the allocator took from the system.
  std::size_t peak_held = 0;
  // Highest sum of the requested bytes of live buffers (mappings not included).
  std::size_t peak_live = 0;
  // Distinct requested sizes among the live buffers when peak_live was reached.
  std::size_t distinct_sizes_at_peak_live = 0;
  // System allocations during the replay (MemoryStats): allocations the
  // cache did not serve, whether memory came from a system call or, in an
  // arena, from reserved address space never used (or decommitted).
  std::uint64_t system_allocations = 0;
  // Address-space reservations the device held after the last event
  // (Device::counters; 0 for a device of whole blocks).
  std::size_t reservations = 0;
  OperationTimes times;
  // The device's statistics after the last event (before the replay freed
  // the buffers and mappings still live).
  MemoryStats final_stats;
  // With ReplayOptions::verify: replayed events compared, and the first mismatch.
  std::uint64_t verified = 0;
  std::optional<StatsMismatch> mismatch;

  // peak_held / peak_live: what the allocator held per byte asked for (0 if nothing was live).
  double fragmentation() const { return peak_live == 0 ? 0 : double(peak_held) / double(peak_live); }
};

// Applies the trace's allocate, free, map, unmap, limit, reset_peak,
// clear_cache and mark events to `device`; release, wire, unwire and refuse
// events follow from the device's policy and are skipped. Where the trace
// carries statistics, the device's limits are first set to those it was
// recorded with. An allocation or mapping the device refuses counts as a
// refusal (its later free or unmap is skipped) and the replay goes on.
// Everything still live at the end is freed before returning.
// FormatError naming the event's seq for a malformed sequence (a free of an
// id that is not live, an allocate of one that is); InvalidArgument if the
// device refuses a limit the trace sets.
ReplayReport replay(const Trace& trace, Device& device, const ReplayOptions& options = {});

// The same allocate/free sequence on glibc malloc/free.
struct MallocReport {
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t refusals = 0;  // malloc returned null
  // Highest arena + hblkhd of mallinfo2() after any operation, less its value
  // before the replay: heap and mmapped bytes glibc held for the process.
  std::size_t peak_held = 0;
  std::size_t peak_live = 0;
  OperationTimes times;

  double fragmentation() const { return peak_live == 0 ? 0 : double(peak_held) / double(peak_live); }
};
MallocReport replay_malloc(const Trace& trace, const ReplayOptions& options = {});

// A fresh device of the named kind for replaying ("cpu"), with default
// limits and no NUVEC_* environment overrides; InvalidArgument for any other.
std::unique_ptr<Device> replay_device(std::string_view kind);

}  // namespace nuvec
