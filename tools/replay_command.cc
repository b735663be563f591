// `nuvec replay TRACE`: a trace's allocations and frees replayed on a fresh
// device (and, with --against malloc, on glibc malloc in the same run), with
// what each held at its peak per byte live, and the time per operation.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "nuvec/trace/replay.h"
#include "command.h"
#include "nuvec/memory.h"
#include "nuvec/trace.h"
#include "stats_table.h"

namespace nuvec::tool {
namespace {

struct ReplayCommandOptions {
  std::string trace;
  std::string device = "cpu";
  std::string memory_limit;
  std::string against;
  bool verify = false;
  bool json = false;
};

nlohmann::ordered_json stats_json(const MemoryStats& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for_each_field(s, [&](const char* name, const auto& value) { j[name] = value; });
  return j;
}

nlohmann::ordered_json times_json(const OperationTimes& t) {
  return {{"ns_per_allocate", t.ns_per_allocate()}, {"ns_per_free", t.ns_per_free()}, {"ns_per_op", t.ns_per_op()}};
}

nlohmann::ordered_json to_json(const std::string& path, const Trace& trace, const ReplayReport& r,
                               const std::optional<MallocReport>& m, bool verify, const std::string& device) {
  const TraceHeader& h = trace.header;
  nlohmann::ordered_json nuvec = {{"device", device},
                                  {"allocations", r.allocations},
                                  {"frees", r.frees},
                                  {"mappings", r.mappings},
                                  {"refusals", r.refusals},
                                  {"peak_live", r.peak_live},
                                  {"peak_held", r.peak_held},
                                  {"fragmentation", r.fragmentation()},
                                  {"system_allocations", r.system_allocations},
                                  {"reservations", r.reservations},
                                  {"distinct_sizes_at_peak_live", r.distinct_sizes_at_peak_live}};
  nuvec.update(times_json(r.times));
  nuvec["final_stats"] = stats_json(r.final_stats);
  nlohmann::ordered_json out = {
      {"trace", path},
      {"header", {{"device", h.device}, {"source", h.source}, {"page_size", h.page_size}, {"dropped", h.dropped}}},
      {"events", r.events},
      {"nuvec", nuvec}};
  if (verify) {
    nlohmann::ordered_json mismatch = nullptr;
    if (r.mismatch) {
      mismatch = {{"seq", r.mismatch->seq},
                  {"field", r.mismatch->field},
                  {"expected", r.mismatch->expected},
                  {"got", r.mismatch->got}};
    }
    out["verify"] = {{"verified", r.verified}, {"mismatch", mismatch}};
  }
  if (m) {
    out["malloc"] = {{"allocations", m->allocations}, {"frees", m->frees},
                     {"refusals", m->refusals},       {"peak_live", m->peak_live},
                     {"peak_held", m->peak_held},     {"fragmentation", m->fragmentation()}};
    out["malloc"].update(times_json(m->times));
  }
  return out;
}

void print_text(const std::string& path, const Trace& trace, const ReplayReport& r,
                const std::optional<MallocReport>& m, bool verify, const std::string& limit_source) {
  const TraceHeader& h = trace.header;
  fmt::print("trace   {}: {} events, recorded by {} on {} (page size {} B{})\n", path, r.events, h.source, h.device,
             h.page_size, h.dropped == 0 ? "" : fmt::format(", {} events dropped", h.dropped));
  fmt::print("device  cpu, memory limit {} at the end ({})\n\n", format_bytes(r.final_stats.memory_limit),
             limit_source);

  const auto row = [&](const char* name, const std::string& ours, const std::string& theirs) {
    if (m) {
      fmt::print("  {:<22}{:>14}{:>16}\n", name, ours, theirs);
    } else {
      fmt::print("  {:<22}{:>14}\n", name, ours);
    }
  };
  row("", "nuvec", "glibc malloc");
  // ReplayReport and MallocReport name their common figures alike.
  const auto both = [&](const char* name, auto cell) { row(name, cell(r), m ? cell(*m) : std::string{}); };
  both("allocations", [](const auto& x) { return fmt::format("{}", x.allocations); });
  both("refusals", [](const auto& x) { return fmt::format("{}", x.refusals); });
  both("peak live", [](const auto& x) { return format_bytes(x.peak_live); });
  both("peak held", [](const auto& x) { return format_bytes(x.peak_held); });
  both("fragmentation", [](const auto& x) { return fmt::format("{:.3f}", x.fragmentation()); });
  row("system allocations", fmt::format("{}", r.system_allocations), "-");
  row("reservations", fmt::format("{}", r.reservations), "-");
  both("ns per allocate", [](const auto& x) { return fmt::format("{:.1f}", x.times.ns_per_allocate()); });
  both("ns per free", [](const auto& x) { return fmt::format("{:.1f}", x.times.ns_per_free()); });
  fmt::print(
      "\n  peak held: active + cache at its highest (malloc: mallinfo2 arena + hblkhd);\n"
      "  peak live: bytes requested by live buffers at their highest ({} distinct sizes then);\n"
      "  fragmentation: peak held / peak live. Times include about one clock read each.\n"
      "  system allocations: allocations the cache did not serve (on the CPU, taken from fresh\n"
      "  or decommitted address space, whose pages come on first touch, or from a new\n"
      "  reservation); reservations: the address-space reservations held at the end.\n",
      r.distinct_sizes_at_peak_live);
  if (verify) {
    if (r.mismatch) {
      fmt::print("\nverify  MISMATCH at seq {}: {} recorded {}, replayed {} ({} events compared{})\n", r.mismatch->seq,
                 r.mismatch->field, r.mismatch->expected, r.mismatch->got, r.verified,
                 h.page_size == page_size()
                     ? ""
                     : fmt::format("; recorded with pages of {} B, here {} B", h.page_size, page_size()));
    } else if (r.verified == 0) {
      fmt::print("\nverify  nothing to compare: the trace carries no statistics (source {})\n", h.source);
    } else {
      fmt::print("\nverify  all {} replayed events match their recorded statistics\n", r.verified);
    }
  }
  fmt::print("\nfinal statistics (before the replay freed what was still live):\n{}", stats_table(r.final_stats));
}

}  // namespace

Command add_replay_command(CLI::App& parent) {
  auto options = std::make_shared<ReplayCommandOptions>();
  CLI::App* app = parent.add_subcommand("replay", "Replay a trace's allocations on a device and report what it held");
  app->footer(
      "Replays TRACE (docs/trace-format.md: one nuvec recorded, or one converted from\n"
      "PyTorch) on a fresh device: its allocations and frees with the same sizes, in\n"
      "the same order and overlap, its mappings (of scratch files of the same sizes),\n"
      "limit changes, peak resets and cache clears. Reports peak live bytes (what the\n"
      "program asked for), peak held bytes (active + cache: what the allocator took),\n"
      "their ratio (the fragmentation overhead), system allocations and misses\n"
      "(allocations the cache did not serve), refusals under the limit, and time per\n"
      "operation. The device starts with the limits the trace was recorded with\n"
      "(NUVEC_* variables are not read); --memory-limit replaces the memory limit.\n"
      "--verify compares the device's statistics with the recorded ones after every\n"
      "event (exit status 1 on a mismatch). --against malloc replays the same\n"
      "allocations on glibc malloc/free in the same run, side by side.");
  app->add_option("TRACE", options->trace, "the trace file (JSON Lines)")->required()->check(CLI::ExistingFile);
  app->add_option("--device", options->device, "the device to replay on (only cpu for now)")
      ->check(CLI::Validator(
          [](std::string& value) {
            return value == "cpu"
                       ? std::string{}
                       : "only --device cpu can replay for now (CUDA replay is not built yet), not '" + value + "'";
          },
          "cpu", "device"));
  app->add_option("--memory-limit", options->memory_limit, "hard limit on active + mapped, e.g. 8GiB");
  app->add_flag("--verify", options->verify, "check the device's statistics against the recorded ones, event by event");
  app->add_option("--against", options->against, "also replay on another allocator: malloc (glibc)")
      ->check(CLI::IsMember({"malloc"}));
  app->add_flag("--json", options->json, "print one JSON object instead of the report");

  return {app, [options] {
            ReplayOptions replay_options;
            replay_options.trace_path = options->trace;
            replay_options.verify = options->verify;
            if (!options->memory_limit.empty()) {
              replay_options.memory_limit = parse_size(options->memory_limit, "--memory-limit");
            }
            const Trace trace = read_trace(options->trace);
            // malloc first, so that the device's cached blocks are not in glibc's figures.
            std::optional<MallocReport> against;
            if (options->against == "malloc") against = replay_malloc(trace, replay_options);
            const std::unique_ptr<Device> device = replay_device(options->device);
            const ReplayReport report = replay(trace, *device, replay_options);
            if (options->json) {
              fmt::print("{}\n",
                         to_json(options->trace, trace, report, against, options->verify, options->device).dump(2));
            } else {
              const bool recorded = std::any_of(trace.events.begin(), trace.events.end(),
                                                [](const TraceEvent& e) { return e.stats.has_value(); });
              print_text(options->trace, trace, report, against, options->verify,
                         replay_options.memory_limit ? "--memory-limit"
                         : recorded                  ? "as recorded"
                                                     : "default: physical memory, unless the trace sets one");
            }
            return options->verify && report.mismatch ? 1 : 0;
          }};
}

}  // namespace nuvec::tool
