// `nuvec demo`: a narrated tour of the allocator's policy on a fresh,
// independent CPU device: size classes, the cache, file mappings, wiring,
// peaks, and the hard memory limit. Each step prints what changed and why.
#include <sys/resource.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <fmt/core.h>

#include "command.h"
#include "demo_narrator.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"
#include "scratch_file.h"
#include "stats_table.h"

namespace nuvec::tool {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// CAP_IPC_LOCK (capability 14) in the effective set, from /proc/self/status.
bool has_cap_ipc_lock() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      return (std::stoull(line.substr(7), nullptr, 16) >> 14) & 1;
    }
  }
  return false;
}

// Why mlock may be refused here, and what to do about it.
std::string memlock_explanation() {
  rlimit limit{};
  std::string lockable = "an unknown amount";
  if (getrlimit(RLIMIT_MEMLOCK, &limit) == 0) {
    lockable = limit.rlim_cur == RLIM_INFINITY ? "any amount" : format_bytes(limit.rlim_cur);
  }
  return fmt::format(
      "This process may lock {} (RLIMIT_MEMLOCK, `ulimit -l`) and {} CAP_IPC_LOCK.\n"
      "    To wire, run with CAP_IPC_LOCK (e.g. as root), raise the limit (`ulimit -l unlimited`,\n"
      "    memlock in /etc/security/limits.conf, `docker run --ulimit memlock=-1`), or ask for\n"
      "    less (Device::set_wired_limit, NUVEC_WIRED_LIMIT). The demo goes on without wiring.",
      lockable, has_cap_ipc_lock() ? "has" : "lacks");
}

int run_demo(const std::optional<std::filesystem::path>& dir) {
  // Declared first, destroyed last: the file outlives its mapping.
  Scratch scratch(dir);
  std::unique_ptr<Device> device = Device::create_cpu();

  fmt::print("nuvec demo: a new, independent CPU device (Device::create_cpu()); page size {} B.\n",
             page_size());
  fmt::print("Its statistics at creation (limits from NUVEC_* or the defaults):\n\n{}",
             stats_table(device->memory()));
  fmt::print("\nEach step shows the fields that changed (plus active and peak_with_mapped),\n"
             "then one line: what changed — why.\n");
  Narrator story(*device);

  // 1. Cache misses: the blocks come from fresh address space.
  Buffer small = device->new_buffer(1000);
  Buffer medium = device->new_buffer(1 * kMiB);
  Buffer large = device->new_buffer(64 * kMiB);
  story.step("new_buffer(1000 B), new_buffer(1 MiB), new_buffer(64 MiB)", "allocated 3 buffers",
             fmt::format("each is counted at its size class (1000 B → {}: 256-byte steps up to a "
                         "page, whole pages beyond); the cache was empty, so all 3 are misses "
                         "(system_allocations counts misses), carved from address space reserved from the "
                         "system (Device::counters(): {} reservations, one for sub-page blocks, one for the rest)",
                         format_bytes(small.capacity()), device->counters().reservations),
             {"system_allocations"});

  // 2. A free feeds the cache.
  medium.reset();
  story.step("free the 1 MiB buffer (Buffer::reset)", "freed 1 MiB",
             "the block stays in the cache for reuse, its pages still committed: nothing goes back to "
             "the system");

  // 3. A hit: the cached block serves the same size again.
  medium = device->new_buffer(1 * kMiB);
  story.step("new_buffer(1 MiB) again", "allocated 1 MiB",
             "a cache hit: the freed block comes back with its pages already committed, so "
             "system_allocations stays. A miss would have carved fresh address space from a "
             "reservation (no system call, but new memory: it counts). A steady-state loop is all hits "
             "after its first round",
             {"system_allocations"});

  // 4. A mapping: counted in `mapped`, never in `active`.
  const std::filesystem::path file = scratch.write_file("weights.bin", 32 * kMiB);
  MappedFile mapping = device->map_file(file);
  story.step(fmt::format("map_file({}) (a 32 MiB file just written)", file.string()),
             "mapped 32 MiB",
             "the file's pages are shared with the page cache, not copied: they count in mapped "
             "and peak_with_mapped, never in active or peak",
             {"peak"});

  // 5. Wiring: keep everything live resident, within what the process may lock.
  const std::size_t live = device->memory().active_with_mapped;
  const std::string wire_call = fmt::format("set_wired_limit({})", format_bytes(live));
  bool wired = false;
  try {
    device->set_wired_limit(live);
    wired = true;
    story.step(wire_call, "wired every live buffer and the mapping",
               "items are locked with mlock, oldest first, while wired stays within the wired "
               "limit, so they cannot be swapped out; wired_mapped is the mapping's share",
               {"wired_mapped"});
  } catch (const InvalidArgument& e) {
    story.step(wire_call + " → InvalidArgument", "wiring refused",
               "a wired limit above what the process may lock is an error, not a silent cap");
    story.note(fmt::format("what(): {}", e.what()));
    story.note(memlock_explanation());
  } catch (const IoError& e) {
    story.step(wire_call + " → IoError", "mlock failed",
               "the wired limit and wiring were restored as they were");
    story.note(fmt::format("what(): {}", e.what()));
    story.note(memlock_explanation());
  }

  // 6. A freed wired block stays wired while cached.
  large.reset();
  story.step("free the 64 MiB buffer", "freed 64 MiB",
             wired ? "the block moves to the cache and stays wired there, so reusing it needs no "
                     "new mlock"
                   : "freed blocks are kept in the cache for reuse",
             {"wired"});

  // 7. Peaks restart from what is live, not from zero.
  device->reset_peak();
  story.step("reset_peak()", "reset the peaks",
             "peak = active and peak_with_mapped = active + mapped: the peaks restart from what "
             "is live now (as PyTorch), not from zero (as MLX)",
             {"peak"});

  // 8. Unmapping.
  mapping.reset();
  story.step("unmap the file (MappedFile::reset, its last owner)", "unmapped 32 MiB",
             wired ? "the mapping is unlocked and unmapped; the peaks keep the high-water mark"
                   : "the mapping is gone; the peaks keep the high-water mark",
             {"peak_with_mapped"});

  // 9. Clearing the cache.
  device->clear_cache();
  story.step("clear_cache()", "released the cache",
             fmt::format("the cached blocks' pages go back to the system (MADV_DONTNEED){}; their address "
                         "space stays reserved for later misses, and system_allocations, a count of misses so "
                         "far, does not fall",
                         wired ? ", a wired block unlocked first" : ""),
             {"system_allocations"});

  // 10-11. The memory limit is a hard refusal.
  const std::size_t limit = device->memory().active_with_mapped + 16 * kMiB;
  device->set_memory_limit(limit);
  story.step(fmt::format("set_memory_limit({})", format_bytes(limit)), "lowered the memory limit",
             "active + mapped may not pass it: what would is refused with OutOfMemory");

  const MemoryStats before = device->memory();
  try {
    Buffer too_large = device->new_buffer(256 * kMiB);
    story.note("unexpected: a 256 MiB buffer was granted past the memory limit");
    return 1;
  } catch (const OutOfMemory& e) {
    const MemoryStats after = device->memory();
    story.step("new_buffer(256 MiB) → OutOfMemory", "refused 256 MiB",
               "the limit is a refusal, not a guideline: nothing changed and nothing leaked",
               {"cache", "system_allocations"});
    story.note(fmt::format("what(): {}", e.what()));
    story.note(fmt::format("requested() = {}; memory() unchanged: {}; e.stats() == memory(): {}",
                           format_bytes(e.requested()), before == after ? "yes" : "NO",
                           e.stats() == after ? "yes" : "NO"));
  }

  // 12. The end.
  small.reset();
  medium.reset();
  story.step("free the last two buffers", "freed the 1 MiB and 1000 B buffers",
             "nothing is live; the cache holds the freed blocks until the device is destroyed, "
             "which returns the device's reservations to the system");

  fmt::print("\nFinal statistics:\n\n{}", stats_table(device->memory()));
  fmt::print("\nRemoving {}{}.\n", dir ? "" : "the scratch directory ",
             dir ? file.string() : scratch.dir().string());
  return 0;
}

}  // namespace

Command add_demo_command(CLI::App& parent) {
  auto dir = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand(
      "demo", "Walk through the allocator's policy step by step, showing what changes and why");
  app->footer(std::string{
                  "On a new, independent CPU device (Device::create_cpu()): allocate 1000 B, 1 MiB\n"
                  "and 64 MiB; free one and reuse it from the cache; write a 32 MiB file and map\n"
                  "it; wire everything live (needs CAP_IPC_LOCK or a large enough `ulimit -l`;\n"
                  "otherwise the step says why not and the demo goes on); free a wired buffer;\n"
                  "reset the peaks; unmap; clear the cache; and have an allocation refused by the\n"
                  "memory limit. After each step it prints the statistics that changed and one\n"
                  "line saying why. Takes about 100 MiB of memory and 32 MiB of disk, briefly.\n\n"} +
              kEnvironmentHelp);
  app->add_option("--dir", *dir,
                  "directory for the 32 MiB scratch file (default: a new directory under $TMPDIR "
                  "or /tmp); the file is removed afterwards")
      ->type_name("DIR");  // checked by Scratch, which says what is wrong with it
  return {app, [dir] {
            return run_demo(dir->empty() ? std::nullopt
                                         : std::optional<std::filesystem::path>(*dir));
          }};
}

}  // namespace nuvec::tool
