// Replay on a device: the objects live in the slots of a ReplayPlan; after
// every event the device's statistics are sampled (and, with verify,
// compared with the recorded ones).
#include "nuvec/trace/replay.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "cpu/cpu_backend.h"
#include "nuvec/error.h"
#include "nuvec/mapped_file.h"
#include "trace/replay_plan.h"

namespace nuvec {

namespace {

using detail::Clock;
using detail::elapsed_ns;
using detail::follows_from_policy;
using detail::trace_name;

using Kind = TraceEventKind;

// Live requested bytes, their peak, and the distinct sizes live at the peak.
class LiveBytes {
 public:
  void add(std::size_t bytes) {
    live_ += bytes;
    ++count_by_size_[bytes];
    if (live_ > peak_) {
      peak_ = live_;
      distinct_at_peak_ = count_by_size_.size();
    }
  }
  void remove(std::size_t bytes) {
    live_ -= bytes;
    const auto it = count_by_size_.find(bytes);
    if (--it->second == 0) count_by_size_.erase(it);
  }
  std::size_t peak() const { return peak_; }
  std::size_t distinct_at_peak() const { return distinct_at_peak_; }

 private:
  std::size_t live_ = 0;
  std::size_t peak_ = 0;
  std::size_t distinct_at_peak_ = 0;
  std::unordered_map<std::size_t, std::size_t> count_by_size_;
};

// Files for map events to map: one of each size, in a fresh directory that
// is removed (with them) at the end. Sparse: mapping counts the length, and
// nothing reads the pages.
class ScratchFiles {
 public:
  explicit ScratchFiles(std::filesystem::path parent) : parent_(std::move(parent)) {}
  ~ScratchFiles() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  ScratchFiles(const ScratchFiles&) = delete;
  ScratchFiles& operator=(const ScratchFiles&) = delete;

  const std::filesystem::path& file_of(std::uint64_t size) {
    const auto it = files_.find(size);
    if (it != files_.end()) return it->second;
    if (dir_.empty()) make_dir();
    std::filesystem::path path = dir_ / fmt::format("{}.bin", size);
    std::filesystem::resize_file(create(path), size);
    return files_.emplace(size, std::move(path)).first->second;
  }

 private:
  void make_dir() {
    const std::filesystem::path parent = parent_.empty() ? std::filesystem::temp_directory_path() : parent_;
    std::string pattern = (parent / "nuvec-replay-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      const int error = errno;
      throw IoError(fmt::format("cannot make a scratch directory under {} for the trace's mappings: {}",
                                parent.string(), std::strerror(error)),
                    parent, error);
    }
    dir_ = pattern;
  }
  static const std::filesystem::path& create(const std::filesystem::path& path) {
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fclose(f);
      return path;
    }
    const int error = errno;
    throw IoError(fmt::format("cannot create {}: {}", path.string(), std::strerror(error)), path, error);
  }

  std::filesystem::path parent_;
  std::filesystem::path dir_;
  std::map<std::uint64_t, std::filesystem::path> files_;
};

// Every field's name and value, in for_each_field order.
std::vector<std::pair<const char*, std::uint64_t>> fields_of(const MemoryStats& s) {
  std::vector<std::pair<const char*, std::uint64_t>> out;
  for_each_field(s, [&](const char* name, const auto& value) { out.emplace_back(name, value); });
  return out;
}

// How many fields of `got` differ from `expected`; the first goes to `first`.
std::size_t differences(const MemoryStats& expected, const MemoryStats& got, StatsMismatch& first) {
  const auto want = fields_of(expected);
  const auto have = fields_of(got);
  std::size_t count = 0;
  for (std::size_t f = 0; f < want.size(); ++f) {
    if (want[f].second == have[f].second) continue;
    if (count++ == 0) {
      first.field = want[f].first;
      first.expected = want[f].second;
      first.got = have[f].second;
    }
  }
  return count;
}

// After replaying events[i], the device must match the recorded statistics
// of event i or of one of the policy events right after it: a recorder may
// log the releases a free or clear_cache caused after it (and the device
// then matches the last of them), or before the next allocate that caused
// them (and the device matches event i). Returns the closest mismatch.
std::optional<StatsMismatch> check(const Trace& trace, std::size_t i, const MemoryStats& got) {
  std::optional<StatsMismatch> closest;
  std::size_t fewest = static_cast<std::size_t>(-1);
  for (std::size_t k = i; k < trace.events.size() && (k == i || follows_from_policy(trace.events[k].kind)); ++k) {
    const TraceEvent& e = trace.events[k];
    if (!e.stats) continue;
    StatsMismatch m;
    m.seq = e.seq;
    const std::size_t n = differences(*e.stats, got, m);
    if (n == 0) return std::nullopt;
    if (n < fewest) {
      fewest = n;
      closest = m;
    }
  }
  return closest;
}

template <class Set>
void set_limit(const ReplayOptions& options, const TraceEvent* e, const char* what, std::size_t bytes, Set set) {
  try {
    set(bytes);
  } catch (const InvalidArgument& error) {
    const std::string where =
        e == nullptr ? std::string{"the limits it was recorded with"} : fmt::format("event seq {}", e->seq);
    throw InvalidArgument(
        fmt::format("{}: {}: cannot set the {} to {}: {}", trace_name(options), where, what, bytes, error.what()));
  }
}

// Sets the device's limits to those the trace was recorded with: the first
// event's statistics hold them, except the one that event itself sets.
void adopt_recorded_limits(const Trace& trace, Device& device, const ReplayOptions& options) {
  const auto first =
      std::find_if(trace.events.begin(), trace.events.end(), [](const TraceEvent& e) { return e.stats.has_value(); });
  if (first == trace.events.end()) return;
  const MemoryStats& s = *first->stats;
  if (first->kind != Kind::memory_limit && !options.memory_limit) {
    set_limit(options, nullptr, "memory limit", s.memory_limit, [&](std::size_t b) { device.set_memory_limit(b); });
  }
  if (first->kind != Kind::cache_limit) {
    set_limit(options, nullptr, "cache limit", s.cache_limit, [&](std::size_t b) { device.set_cache_limit(b); });
  }
  if (first->kind != Kind::wired_limit && s.wired_limit != device.memory().wired_limit) {
    set_limit(options, nullptr, "wired limit", s.wired_limit, [&](std::size_t b) { device.set_wired_limit(b); });
  }
}

}  // namespace

ReplayReport replay(const Trace& trace, Device& device, const ReplayOptions& options) {
  const detail::ReplayPlan plan = detail::make_replay_plan(trace, options);
  if (options.memory_limit) {
    set_limit(options, nullptr, "memory limit (--memory-limit)", *options.memory_limit,
              [&](std::size_t b) { device.set_memory_limit(b); });
  }
  adopt_recorded_limits(trace, device, options);

  ReplayReport report;
  report.events = trace.events.size();
  const MemoryStats start = device.memory();
  report.peak_held = start.active + start.cache;

  // Declared before the slots, so that mappings go before their files.
  ScratchFiles files(options.scratch_dir);
  std::vector<Buffer> buffers(plan.buffers);
  std::vector<MappedFile> mappings(plan.mappings);
  std::vector<char> refused(plan.buffers + plan.mappings, 0);  // buffers' slots, then mappings'
  std::vector<std::size_t> requested(plan.buffers, 0);
  LiveBytes live;

  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    const std::size_t slot = plan.slot[i];
    switch (e.kind) {
      case Kind::allocate: {
        ++report.allocations;
        try {
          const Clock::time_point t0 = Clock::now();
          buffers[slot] = device.new_buffer(e.requested);
          const Clock::time_point t1 = Clock::now();
          report.times.allocate_ns += elapsed_ns(t0, t1);
          ++report.times.allocates;
          requested[slot] = e.requested;
          live.add(e.requested);
        } catch (const OutOfMemory&) {
          ++report.refusals;
          refused[slot] = 1;
        }
        break;
      }
      case Kind::free: {
        ++report.frees;
        if (refused[slot]) {
          refused[slot] = 0;
          break;
        }
        const Clock::time_point t0 = Clock::now();
        buffers[slot].reset();
        const Clock::time_point t1 = Clock::now();
        report.times.free_ns += elapsed_ns(t0, t1);
        ++report.times.frees;
        live.remove(requested[slot]);
        break;
      }
      case Kind::map: {
        ++report.mappings;
        try {
          mappings[slot] = device.map_file(files.file_of(e.size));
        } catch (const OutOfMemory&) {
          ++report.refusals;
          refused[plan.buffers + slot] = 1;
        } catch (const std::exception& failure) {
          // A size the scratch file system cannot hold (EFBIG) or map: name
          // the trace and the event, not only the scratch file.
          throw IoError(fmt::format("{}: event seq {} (map of {} bytes): cannot replay it: {}", trace_name(options),
                                    e.seq, e.size, failure.what()),
                        options.trace_path, errno);
        }
        break;
      }
      case Kind::unmap:
        refused[plan.buffers + slot] = 0;
        mappings[slot].reset();
        break;
      case Kind::memory_limit:
        if (!options.memory_limit) {
          set_limit(options, &e, "memory limit", e.requested, [&](std::size_t b) { device.set_memory_limit(b); });
        }
        break;
      case Kind::cache_limit:
        set_limit(options, &e, "cache limit", e.requested, [&](std::size_t b) { device.set_cache_limit(b); });
        break;
      case Kind::wired_limit:
        set_limit(options, &e, "wired limit", e.requested, [&](std::size_t b) { device.set_wired_limit(b); });
        break;
      case Kind::reset_peak:
        device.reset_peak();
        break;
      case Kind::clear_cache:
        device.clear_cache();
        break;
      case Kind::mark:
        break;
      case Kind::release:
      case Kind::wire:
      case Kind::unwire:
      case Kind::refuse:
        continue;
    }
    const MemoryStats now = device.memory();
    report.peak_held = std::max(report.peak_held, now.active + now.cache);
    if (options.verify && e.stats) {
      ++report.verified;
      if (!report.mismatch) report.mismatch = check(trace, i, now);
    }
  }

  report.final_stats = device.memory();
  report.system_allocations = report.final_stats.system_allocations - start.system_allocations;
  report.reservations = device.counters().reservations;
  report.peak_live = live.peak();
  report.distinct_sizes_at_peak_live = live.distinct_at_peak();
  return report;  // the buffers and mappings still live go back to the device here
}

std::unique_ptr<Device> replay_device(std::string_view kind) {
  if (kind != "cpu") {
    throw InvalidArgument(
        fmt::format("cannot replay on device '{}': only the CPU device can replay traces for now "
                    "(use --device cpu)",
                    kind));
  }
  return std::make_unique<Device>(cpu::make_backend(), /*read_environment=*/false);
}

}  // namespace nuvec
