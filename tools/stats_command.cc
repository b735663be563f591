// `nuvec stats`: what the process-wide CPU device holds right now, as a table
// or (--json) as the JSON object of nuvec::to_json and nothing else.
#include <memory>
#include <string>

#include <fmt/core.h>

#include "command.h"
#include "nuvec/device.h"
#include "nuvec/memory.h"
#include "nuvec/memory_stats.h"
#include "stats_table.h"

namespace nuvec::tool {

Command add_stats_command(CLI::App& parent) {
  auto json = std::make_shared<bool>(false);
  CLI::App* app =
      parent.add_subcommand("stats", "Print the CPU device's memory statistics and limits");
  app->footer(std::string{
                  "Prints the MemoryStats of the process-wide CPU device (Device::cpu()) as a\n"
                  "table: live, cached, mapped and wired bytes, the peaks and the limits, with\n"
                  "the page size and physical memory (the cgroup limit where lower). In a fresh\n"
                  "process only the limits are non-zero: they show what the NUVEC_* variables\n"
                  "and the defaults resolve to on this machine. Field meanings: docs/design.md,\n"
                  "MemoryStats.\n\n"} +
              kEnvironmentHelp);
  app->add_flag("--json", *json, "print only the JSON object (field names as in MemoryStats)");

  return {app, [json] {
            Device& device = Device::cpu();
            const MemoryStats stats = device.memory();
            if (*json) {
              fmt::print("{}\n", to_json(stats));
              return 0;
            }
            const std::size_t physical = physical_memory();
            fmt::print("device           {}\n", device.name());
            fmt::print("page size        {} B\n", page_size());
            fmt::print("physical memory  {}\n",
                       physical == 0 ? std::string{"unknown"}
                                     : fmt::format("{} ({} B)", format_bytes(physical), physical));
            fmt::print("\n{}", stats_table(stats));
            return 0;
          }};
}

}  // namespace nuvec::tool
