// `nuvec profile [MODEL]`: load, prefill and decode, each measured in a fresh
// process (this program re-run as `nuvec profile-phase`), as one table of
// time, speed and memory: nuvec's statistics, the OS's peak resident size
// (on a GPU, --device cuda: NVML's figure for the process), and the floor
// each phase cannot go below.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "builtin_model.h"
#include "child_process.h"
#include "cli_numbers.h"
#include "command.h"
#include "device_option.h"
#include "nuvec/lm/kernels.h"
#include "nuvec/error.h"
#include "nuvec/lm/config.h"
#include "nuvec/memory.h"
#include "model_flags.h"
#include "profile_report.h"

namespace nuvec::tool {
namespace {

struct ProfileArgs {
  std::string model;
  std::size_t prompt_len = 512;
  std::size_t max_new = 128;
  std::size_t prefill_chunk = 512;
  ModelFlags flags;
  bool json = false;
  std::string plot;
  std::uint64_t bandwidth_passes = 3;
  std::string device = "cpu";
};

// The read bandwidth decode is set against, at the phases' thread count,
// measured here before any phase runs (this process reports no memory): a
// sum over 1 GiB or 4 x the last-level cache, the larger, in 4 KiB pages as
// the mapped weights have, the median of `passes` passes (about a second).
ReadBandwidthMeasure measure_bandwidth(int threads, int passes) {
  if (passes == 0) return {};
  const std::size_t bytes =
      std::max<std::size_t>(std::size_t{1} << 30, 4 * lm::kernels::last_level_cache_bytes());
  const lm::kernels::ReadBandwidth b = lm::kernels::measure_read_bandwidth(threads, bytes, passes);
  return {b.bytes_per_second, b.threads, b.bytes, b.passes, "normal"};
}

PhaseResult run_phase(const ProfileArgs& a, const std::string& phase, const std::string& trace) {
  std::vector<std::string> args = {"profile-phase",     a.model,
                                   "--phase",           phase,
                                   "--prompt-len",      std::to_string(a.prompt_len),
                                   "--max-new",         std::to_string(a.max_new),
                                   "--prefill-chunk",   std::to_string(a.prefill_chunk),
                                   "--threads",         std::to_string(a.flags.threads),
                                   "--device",          a.device};
  if (!a.flags.memory_limit.empty()) args.insert(args.end(), {"--memory-limit", a.flags.memory_limit});
  if (a.flags.mlock) args.push_back("--mlock");
  if (a.flags.quiet) args.push_back("--quiet");
  if (!a.flags.kv_cache.empty()) args.insert(args.end(), {"--kv-cache", a.flags.kv_cache});
  if (!trace.empty()) {
    args.push_back("--trace");
    args.push_back(trace);
  }
  if (isatty(STDERR_FILENO) == 1 && !a.flags.quiet) fmt::print(stderr, "  {} (a fresh process)...\n", phase);
  const ChildResult child = run_self(args);
  if (child.exit_status != 0) {
    throw InvalidArgument(fmt::format("the {} phase failed (exit status {}); its error is above", phase,
                                      child.exit_status));
  }
  return phase_from_json(nlohmann::json::parse(child.out));
}

int profile(ProfileArgs a) {
  if (a.model.empty()) a.model = ensure_builtin_model().string();
  if (a.prompt_len == 0 || a.max_new == 0 || a.prefill_chunk == 0) {
    throw InvalidArgument("--prompt-len, --max-new and --prefill-chunk must be at least 1");
  }
  const DeviceSpec spec = parse_device(a.device);
  if (spec.cuda) {
    // Refused here, in one line, rather than three times by the phases.
    refuse_cpu_only_flags(a.flags, false, spec);
    require_usable(spec);
    a.bandwidth_passes = 0;  // the CPU's read bandwidth says nothing of a GPU's decode
  }
  const lm::ModelConfig config = lm::read_config_of(a.model);
  if (a.flags.threads <= 0) a.flags.threads = lm::kernels::threads();

  std::string trace;
  if (!a.plot.empty()) {
    trace = (std::filesystem::temp_directory_path() / fmt::format("nuvec-profile-{}.jsonl", getpid())).string();
  }
  if (isatty(STDERR_FILENO) == 1 && !a.flags.quiet && a.bandwidth_passes > 0) {
    fmt::print(stderr, "  read bandwidth at {} threads...\n", a.flags.threads);
  }
  const ReadBandwidthMeasure bandwidth = measure_bandwidth(a.flags.threads, static_cast<int>(a.bandwidth_passes));
  std::vector<PhaseResult> phases;
  for (const char* phase : {"load", "prefill", "decode"}) {
    // The decode process goes through all three phases; with --plot its
    // trace, marked phase by phase, is the timeline.
    phases.push_back(run_phase(a, phase, phase == std::string("decode") ? trace : ""));
  }

  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = a.model;
    j["architecture"] = lm::architecture_name(config.architecture);
    j["prompt_len"] = a.prompt_len;
    j["max_new"] = a.max_new;
    j["prefill_chunk"] = a.prefill_chunk;
    j["threads"] = a.flags.threads;
    j["device"] = spec.name();
    j["kv_cache"] = lm::kv_cache_precision_name(kv_cache_precision(a.flags));
    j["kernels"] = lm::kernels::linear_isa();
    j["phases"] = nlohmann::ordered_json::array();
    for (const PhaseResult& r : phases) j["phases"].push_back(to_json(r));
    j["decode_bandwidth"] = decode_bandwidth_json(phases[2], bandwidth);
    j["os_disagreements"] = os_disagreements(phases);
    j["gpu_memory"] = gpu_memory_notes(phases);
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}: {}, {} layers, hidden {}, vocabulary {}; weights {}\n", a.model,
               lm::architecture_name(config.architecture), config.num_hidden_layers, config.hidden_size,
               config.vocab_size, format_bytes(phases[0].floor_weights));
    if (spec.cuda) {
      fmt::print("prompt {} tokens (chunks of {}), decode {} tokens (greedy, chosen on the GPU), on {}: the "
                 "statistics are that device's (load = map + upload); each phase in a fresh process, prefill "
                 "and decode timed after an untimed pass of each (the GPU's first use, which loads the kernels' "
                 "modules and plans cuBLASLt's products: {} and {})\n\n",
                 a.prompt_len, a.prefill_chunk, a.max_new, spec.name(), format_seconds(phases[1].warmup_seconds),
                 format_seconds(phases[2].warmup_seconds));
    } else {
      fmt::print("prompt {} tokens (chunks of {}), decode {} tokens, {} threads ({} kernels); each phase in a "
                 "fresh process\n\n",
                 a.prompt_len, a.prefill_chunk, a.max_new, a.flags.threads, lm::kernels::linear_isa());
    }
    fmt::print("{}\n", profile_table(phases, bandwidth));
    const PhaseResult& d = phases[2];
    if (bandwidth.bytes_per_second > 0) {
      fmt::print("decode weights read = {} of weights per token (as stored: quantized blocks, bf16...) x tokens/s; "
                 "of read bw = that / {:.2f} GB/s, the read bandwidth at {} threads measured before the phases "
                 "(a sum over {}, 4 KiB pages, median of {} passes; nuvec roofline): {:.2f}\n",
                 format_bytes(d.weight_bytes_per_token), bandwidth.bytes_per_second / 1e9, bandwidth.threads,
                 format_bytes(bandwidth.bytes), bandwidth.passes, fraction_of_bandwidth(d, bandwidth));
    } else {
      fmt::print("decode weights read = {} of weights per token (as stored) x tokens/s; the read bandwidth was "
                 "not measured ({})\n",
                 format_bytes(d.weight_bytes_per_token),
                 spec.cuda ? "the CPU's says nothing of a GPU's" : "--bandwidth-passes 0");
    }
    fmt::print("floor = the weights as held + the KV cache ({}) + the largest single intermediate: prefill {} "
               "({}), decode {} ({})\n",
               format_bytes(phases[1].floor_kv_cache), phases[1].intermediate_name,
               format_bytes(phases[1].floor_intermediate), phases[2].intermediate_name,
               format_bytes(phases[2].floor_intermediate));
    fmt::print("decode: {} system allocations (cache misses) after its first step; loading added {} "
               "private dirty and {} private clean memory (smaps_rollup)\n",
               phases[2].steady_system_allocations,
               format_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(0, phases[0].private_dirty_added))),
               format_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(0, phases[0].private_clean_added))));
    if (!d.decode_launch_note.empty()) fmt::print("decode: {}\n", d.decode_launch_note);
    for (const std::string& note : gpu_memory_notes(phases)) fmt::print("GPU memory: {}\n", note);
    const std::vector<std::string> notes = os_disagreements(phases);
    if (spec.cuda) {
      // VmHWM is the host's; the GPU's memory was set against NVML above.
    } else if (notes.empty()) {
      fmt::print("OS check: every phase's VmHWM is within tolerance of the program's own memory + "
                 "peak_with_mapped\n");
    }
    for (const std::string& note : notes) fmt::print("OS check: {}\n", note);
  }

  if (!a.plot.empty()) {
    const ChildResult plot = run_self({"plot", trace, "-o", a.plot, "--x", "time", "--title",
                                       fmt::format("nuvec profile: prompt {}, decode {}", a.prompt_len,
                                                   a.max_new)});
    std::filesystem::remove(trace);
    if (plot.exit_status != 0) throw InvalidArgument(fmt::format("drawing {} failed (see above)", a.plot));
    fmt::print(stderr, "{}", plot.out);
  }
  return 0;
}

}  // namespace

Command add_profile_command(CLI::App& parent) {
  auto a = std::make_shared<ProfileArgs>();
  CLI::App* app = parent.add_subcommand("profile", "Measure a model's load, prefill and decode: time and memory");
  app->footer(
      "Runs each phase in a fresh process (this program re-run), as the method of\n"
      "docs/design.md says: load the model, reset_peak(), run the phase, report. load maps the\n"
      "checkpoint; prefill runs a synthetic prompt of --prompt-len tokens; decode\n"
      "generates --max-new tokens greedily after that prompt. Columns: the allocator's\n"
      "active, peak, mapped and peak_with_mapped at the end of the phase (peaks since\n"
      "its start), the OS's peak resident size (VmHWM, reset at the phase's start),\n"
      "and the floor: the weights + the KV cache + the largest single intermediate\n"
      "buffer of the phase, with peak_with_mapped / floor. Where VmHWM and the\n"
      "program's own memory + peak_with_mapped differ by more than 5% (or 8 MiB), a\n"
      "note says by how much and why. Without MODEL, the built-in model (nuvec\n"
      "demo-model) is used, written on first use to $NUVEC_MODEL_CACHE or\n"
      "~/.cache/nuvec/demo-model. Decode's row also gives the weights read: the bytes of\n"
      "weights one step reads, as the loaded model stores them, times tokens/s, and that\n"
      "as a fraction of the machine's read bandwidth at the same --threads, measured\n"
      "first in this process (--bandwidth-passes passes over 1 GiB; as `nuvec roofline`).\n"
      "--device cuda (cuda:N) measures the GPU path: the table's statistics are the GPU\n"
      "device's, load includes the upload, and beside peak_with_mapped stands NVML's figure\n"
      "for the process with the CUDA context's own size and why the two differ.\n"
      "docs/lm.md explains the table.");
  app->add_option("MODEL", a->model, "model directory or .gguf file (default: the built-in model)")
      ->check(CLI::ExistingPath);
  app->add_option("--prompt-len", a->prompt_len, "prompt tokens")
      ->default_val(a->prompt_len)
      ->transform(whole_number_in(1, kMaxTokens, "tokens"));
  app->add_option("--max-new", a->max_new, "tokens to decode")
      ->default_val(a->max_new)
      ->transform(whole_number_in(1, kMaxTokens, "tokens"));
  app->add_option("--prefill-chunk", a->prefill_chunk, "prompt tokens per forward pass")
      ->default_val(a->prefill_chunk)
      ->transform(whole_number_in(1, kMaxTokens, "tokens"));
  add_model_flags(*app, a->flags);
  app->add_option("--bandwidth-passes", a->bandwidth_passes,
                  "passes of the read-bandwidth measure decode is set against (0: not measured)")
      ->default_val(a->bandwidth_passes)
      ->transform(whole_number_in(0, 100, "passes"));
  app->add_flag("--json", a->json, "print the results as JSON");
  add_device_option(*app, a->device);
  app->add_option("--plot", a->plot, "also draw the memory timeline of a run to this .png (nuvec plot)");
  return {app, [a] { return profile(*a); }};
}

}  // namespace nuvec::tool
