// `nuvec roofline [--threads LIST]`: this machine's read bandwidth of main
// memory per thread count, the bound of a decode step (which reads every
// weight once per token): a STREAM-like read-only sum over a buffer far
// larger than the last-level cache, each thread summing its own contiguous
// slice, the median of several passes after an untimed one.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_numbers.h"
#include "command.h"
#include "nuvec/error.h"
#include "nuvec/lm/kernels.h"
#include "nuvec/memory.h"

namespace nuvec::tool {
namespace {

struct RooflineArgs {
  std::string threads;  // "1,2,4"
  bool threads_given = false;  // else: 1 and every CPU
  std::string bytes;    // empty: 1 GiB or 8 x the last-level cache, the larger
  std::uint64_t passes = 5;
  std::string pages = "normal";
  bool json = false;
};

// "1,2,4" as thread counts, each 1..cpus, at most 64 of them, no repeats.
std::vector<int> parse_thread_list(const std::string& text, int cpus) {
  std::vector<int> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const std::optional<std::uint64_t> n = parse_whole_number(item);
    if (!n || *n < 1 || *n > static_cast<std::uint64_t>(cpus)) {
      throw InvalidArgument(fmt::format("--threads {}: '{}' is not a thread count from 1 to {} (the CPUs this "
                                        "process may run on); give a list such as 1,2,4",
                                        text, item, cpus));
    }
    if (std::find(out.begin(), out.end(), static_cast<int>(*n)) == out.end()) out.push_back(static_cast<int>(*n));
    if (out.size() > 64) throw InvalidArgument(fmt::format("--threads {}: at most 64 thread counts", text));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

const char* pages_name(lm::kernels::Pages p) { return p == lm::kernels::Pages::huge ? "huge" : "normal"; }

int roofline(const RooflineArgs& a) {
  const int cpus = usable_cpus();
  std::vector<int> counts = !a.threads_given ? std::vector<int>{1} : parse_thread_list(a.threads, cpus);
  if (!a.threads_given && cpus > 1) counts.push_back(cpus);
  const std::size_t llc = lm::kernels::last_level_cache_bytes();
  std::size_t bytes = std::max<std::size_t>(std::size_t{1} << 30, 8 * llc);
  if (!a.bytes.empty()) bytes = parse_size(a.bytes, "--bytes");
  if (bytes < (std::size_t{1} << 20) || bytes > (std::size_t{1} << 40)) {
    throw InvalidArgument(fmt::format("--bytes {}: give 1MiB to 1TiB (far more than the last-level cache, {})",
                                      a.bytes, llc > 0 ? format_bytes(llc) : "unknown"));
  }
  std::vector<lm::kernels::Pages> pages;
  if (a.pages == "normal" || a.pages == "both") pages.push_back(lm::kernels::Pages::normal);
  if (a.pages == "huge" || a.pages == "both") pages.push_back(lm::kernels::Pages::huge);

  std::vector<lm::kernels::ReadBandwidth> rows;
  for (const lm::kernels::Pages p : pages) {
    for (const int t : counts) rows.push_back(lm::kernels::measure_read_bandwidth(t, bytes, static_cast<int>(a.passes), p));
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["bytes"] = bytes;
    j["passes"] = a.passes;
    j["last_level_cache_bytes"] = llc;
    j["usable_cpus"] = cpus;
    j["read_bandwidth"] = nlohmann::ordered_json::array();
    for (const auto& r : rows) {
      j["read_bandwidth"].push_back({{"threads", r.threads},
                                     {"pages", pages_name(r.pages)},
                                     {"bytes_per_second", r.bytes_per_second},
                                     {"bytes_per_second_per_thread", r.bytes_per_second / r.threads}});
    }
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("read bandwidth: a sum over {} ({} the last-level cache of {}), each thread its own slice, "
             "median of {} passes after one untimed\n\n",
             format_bytes(bytes), llc > 0 ? fmt::format("{:.1f}x", double(bytes) / double(llc)) : "? x",
             llc > 0 ? format_bytes(llc) : "unknown", a.passes);
  fmt::print("{:>7}  {:>6}  {:>8}  {:>12}\n", "threads", "pages", "GB/s", "GB/s/thread");
  for (const auto& r : rows) {
    fmt::print("{:>7}  {:>6}  {:>8.2f}  {:>12.2f}\n", r.threads, pages_name(r.pages), r.bytes_per_second / 1e9,
               r.bytes_per_second / 1e9 / r.threads);
  }
  return 0;
}

}  // namespace

Command add_roofline_command(CLI::App& parent) {
  auto a = std::make_shared<RooflineArgs>();
  CLI::App* app = parent.add_subcommand("roofline", "Measure this machine's memory read bandwidth per thread count");
  app->footer(
      "The bound of a decode step, which reads every weight once per token: each of T\n"
      "threads sums its own contiguous slice of one buffer (read only, 64-bit sums in\n"
      "vector registers), the buffer far larger than the last-level cache so that\n"
      "the bytes come from memory; a pass is timed from the common start to the last\n"
      "thread's end, and the figure is the median of --passes passes after one\n"
      "untimed pass (bytes / seconds, 1 GB = 1e9 bytes). 4 KiB pages by default, as\n"
      "mapped checkpoint files get; --pages huge asks for transparent huge pages.\n"
      "`nuvec profile` states decode's weight bytes per second as a fraction of the\n"
      "same measure at its --threads. The machine's other work takes bandwidth too:\n"
      "measure on an idle machine, and more than once. docs/lm.md explains it.");
  CLI::Option* threads = app->add_option("--threads", a->threads,
                  "comma-separated thread counts, each 1 to the CPUs this process may use (default: 1 and all)");
  app->add_option("--bytes", a->bytes,
                  "bytes summed per pass, 1MiB to 1TiB (default: 1 GiB or 8 x the last-level cache, the larger)");
  app->add_option("--passes", a->passes, "timed passes; the median is reported")
      ->default_val(a->passes)
      ->transform(whole_number_in(1, 1000, "passes"));
  app->add_option("--pages", a->pages, "normal (4 KiB), huge (transparent huge pages) or both")
      ->default_val(a->pages)
      ->check(CLI::IsMember({"normal", "huge", "both"}));
  app->add_flag("--json", a->json, "print the results as JSON");
  return {app, [a, threads] {
            a->threads_given = threads->count() > 0;
            return roofline(*a);
          }};
}

}  // namespace nuvec::tool
