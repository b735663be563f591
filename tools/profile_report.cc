#include "profile_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/memory.h"
#include "nuvec/memory_stats_json.h"

namespace nuvec::tool {

double PhaseResult::ratio() const {
  return floor() == 0 ? 0.0 : static_cast<double>(stats.peak_with_mapped) / static_cast<double>(floor());
}

double PhaseResult::tokens_per_second() const {
  return tokens > 0 && seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
}

double PhaseResult::weight_bytes_per_second() const {
  return static_cast<double>(weight_bytes_per_token) * tokens_per_second();
}

double fraction_of_bandwidth(const PhaseResult& decode, const ReadBandwidthMeasure& bandwidth) {
  return bandwidth.bytes_per_second > 0 ? decode.weight_bytes_per_second() / bandwidth.bytes_per_second : 0.0;
}

nlohmann::ordered_json decode_bandwidth_json(const PhaseResult& decode, const ReadBandwidthMeasure& bandwidth) {
  nlohmann::ordered_json j;
  j["weight_bytes_per_token"] = decode.weight_bytes_per_token;
  j["weight_bytes_per_second"] = decode.weight_bytes_per_second();
  j["read_bandwidth"] = {{"bytes_per_second", bandwidth.bytes_per_second},
                         {"threads", bandwidth.threads},
                         {"bytes", bandwidth.bytes},
                         {"passes", bandwidth.passes},
                         {"pages", bandwidth.pages}};
  j["fraction_of_read_bandwidth"] = fraction_of_bandwidth(decode, bandwidth);
  return j;
}

std::string format_seconds(double seconds) {
  return seconds < 1 ? fmt::format("{:.1f} ms", seconds * 1e3) : fmt::format("{:.2f} s", seconds);
}

nlohmann::ordered_json to_json(const PhaseResult& r) {
  nlohmann::ordered_json j;
  j["phase"] = r.phase;
  j["seconds"] = r.seconds;
  j["tokens"] = r.tokens;
  j["tokens_per_second"] = r.tokens_per_second();
  j["stats"] = nlohmann::json(r.stats);
  j["system_allocations"] = r.system_allocations;
  j["steady_system_allocations"] = r.steady_system_allocations;
  j["os"] = {{"baseline_rss", r.baseline_rss},
             {"vm_hwm", r.vm_hwm},
             {"hwm_reset", r.hwm_reset},
             {"private_clean_added", r.private_clean_added},
             {"private_dirty_added", r.private_dirty_added},
             {"anonymous_added", r.anonymous_added}};
  j["floor"] = {{"bytes", r.floor()},
                {"weights", r.floor_weights},
                {"kv_cache", r.floor_kv_cache},
                {"intermediate", r.floor_intermediate},
                {"intermediate_name", r.intermediate_name}};
  j["peak_with_mapped_over_floor"] = r.ratio();
  j["weight_bytes_per_token"] = r.weight_bytes_per_token;
  j["device"] = r.device;
  j["nvml"] = {{"process_bytes", r.nvml_process_bytes},
               {"context_bytes", r.nvml_context_bytes},
               {"note", r.nvml_note}};
  j["warmup_seconds"] = r.warmup_seconds;
  j["decode_launch_note"] = r.decode_launch_note;
  return j;
}

PhaseResult phase_from_json(const nlohmann::json& j) {
  try {
    PhaseResult r;
    r.phase = j.at("phase").get<std::string>();
    r.seconds = j.at("seconds").get<double>();
    r.tokens = j.at("tokens").get<std::uint64_t>();
    r.stats = j.at("stats").get<MemoryStats>();
    r.system_allocations = j.at("system_allocations").get<std::uint64_t>();
    r.steady_system_allocations = j.at("steady_system_allocations").get<std::uint64_t>();
    const auto& os = j.at("os");
    r.baseline_rss = os.at("baseline_rss").get<std::uint64_t>();
    r.vm_hwm = os.at("vm_hwm").get<std::uint64_t>();
    r.hwm_reset = os.at("hwm_reset").get<bool>();
    r.private_clean_added = os.at("private_clean_added").get<std::int64_t>();
    r.private_dirty_added = os.at("private_dirty_added").get<std::int64_t>();
    r.anonymous_added = os.at("anonymous_added").get<std::int64_t>();
    const auto& f = j.at("floor");
    r.floor_weights = f.at("weights").get<std::uint64_t>();
    r.floor_kv_cache = f.at("kv_cache").get<std::uint64_t>();
    r.floor_intermediate = f.at("intermediate").get<std::uint64_t>();
    r.intermediate_name = f.at("intermediate_name").get<std::string>();
    r.weight_bytes_per_token = j.at("weight_bytes_per_token").get<std::uint64_t>();
    r.device = j.at("device").get<std::string>();
    const auto& nvml = j.at("nvml");
    r.nvml_process_bytes = nvml.at("process_bytes").get<std::uint64_t>();
    r.nvml_context_bytes = nvml.at("context_bytes").get<std::uint64_t>();
    r.nvml_note = nvml.at("note").get<std::string>();
    r.warmup_seconds = j.at("warmup_seconds").get<double>();
    r.decode_launch_note = j.at("decode_launch_note").get<std::string>();
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument(fmt::format("a profile phase reported malformed JSON: {}", e.what()));
  }
}

std::uint64_t os_tolerance(const PhaseResult& r) {
  const std::uint64_t expected = r.baseline_rss + r.stats.peak_with_mapped;
  return std::max<std::uint64_t>(std::uint64_t{8} << 20, expected / 20);
}

std::vector<std::string> os_disagreements(const std::vector<PhaseResult>& phases) {
  std::vector<std::string> notes;
  for (const PhaseResult& r : phases) {
    if (r.vm_hwm == 0 || r.on_gpu()) continue;  // no /proc; or the memory is the GPU's
    const std::uint64_t expected = r.baseline_rss + r.stats.peak_with_mapped;
    const std::uint64_t gap = r.vm_hwm > expected ? r.vm_hwm - expected : expected - r.vm_hwm;
    if (gap <= os_tolerance(r)) continue;
    std::string why;
    if (r.vm_hwm < expected) {
      if (r.phase == "load") {
        why = "loading maps the weights without reading them; the OS counts a mapped page as resident only "
              "once it is read, which prefill and decode do";
      } else {
        why = "the OS counts a page only once it is touched, and this phase left some untouched: the "
              "embedding table is read only at the rows of the tokens seen, and the KV cache is reserved for "
              "every position of the context but written only as it fills";
      }
    } else if (!r.hwm_reset) {
      why = "the kernel would not reset VmHWM (/proc/self/clear_refs), so it includes earlier work in the "
            "same process";
    } else {
      why = "memory outside the allocator (C++ heap, thread stacks, the kernels' thread pool) or freed "
            "buffers still held in the cache grew during the phase";
    }
    notes.push_back(fmt::format("{}: VmHWM {} is {} {} than the program's own {} + peak_with_mapped {} "
                                "(tolerance {}): {}.",
                                r.phase, format_bytes(r.vm_hwm), format_bytes(gap),
                                r.vm_hwm < expected ? "less" : "more", format_bytes(r.baseline_rss),
                                format_bytes(r.stats.peak_with_mapped), format_bytes(os_tolerance(r)), why));
  }
  return notes;
}

std::vector<std::string> gpu_memory_notes(const std::vector<PhaseResult>& phases) {
  std::vector<std::string> notes;
  bool explained = false;
  for (const PhaseResult& r : phases) {
    if (!r.on_gpu()) continue;
    if (r.nvml_process_bytes == 0) {
      notes.push_back(fmt::format("{}: NVML's figure is missing: {}", r.phase, r.nvml_note));
      continue;
    }
    const std::uint64_t held = r.stats.active + r.stats.cache;
    const std::uint64_t accounted = r.nvml_context_bytes + held;
    const std::int64_t rest = static_cast<std::int64_t>(r.nvml_process_bytes) - static_cast<std::int64_t>(accounted);
    notes.push_back(fmt::format("{} on {}: NVML {} at the end = the CUDA context {} + nuvec's active {} + cache {} "
                                "+ {} {}; peak_with_mapped {}",
                                r.phase, r.device, format_bytes(r.nvml_process_bytes),
                                format_bytes(r.nvml_context_bytes), format_bytes(r.stats.active),
                                format_bytes(r.stats.cache), rest < 0 ? "minus" : "other",
                                format_bytes(static_cast<std::uint64_t>(rest < 0 ? -rest : rest)),
                                format_bytes(r.stats.peak_with_mapped)));
    explained = true;
  }
  if (explained) {
    notes.push_back(
        "why NVML and peak_with_mapped differ: NVML counts everything the driver gave the process, the CUDA "
        "context first (measured here after it was made, before nuvec allocated anything: the runtime's own "
        "memory, then the modules of our kernels and of cuBLASLt, loaded as they are first used, grow it), and "
        "nuvec's cache (freed buffers kept for reuse, not in peak_with_mapped); peak_with_mapped counts live "
        "buffers only, the weights, the KV cache, the activations and the cuBLASLt workspace among them "
        "(\"scratch\"). The other bytes are what the driver maps beyond that: nuvec's arena commits in 2 MiB "
        "granules, cuBLASLt's and the runtime's own allocations");
  }
  return notes;
}

std::string profile_table(const std::vector<PhaseResult>& phases, const ReadBandwidthMeasure& bandwidth) {
  // On a GPU the OS's figure is NVML's (the GPU memory of this process), not VmHWM.
  const bool gpu = std::any_of(phases.begin(), phases.end(), [](const PhaseResult& r) { return r.on_gpu(); });
  const std::vector<std::string> head = {"phase",    "time",  "tokens/s",
                                         "active",   "peak",  "mapped",
                                         "peak_with_mapped", gpu ? "NVML process" : "OS VmHWM", "floor",
                                         "peak_with_mapped/floor", "weights read", "of read bw"};
  std::vector<std::vector<std::string>> rows = {head};
  for (const PhaseResult& r : phases) {
    const double per_second = r.tokens_per_second();
    const bool reads = r.weight_bytes_per_token > 0 && per_second > 0;
    rows.push_back({r.phase,
                    format_seconds(r.seconds),
                    r.tokens > 0 ? fmt::format("{:.1f}", per_second) : "-",
                    format_bytes(r.stats.active),
                    format_bytes(r.stats.peak),
                    format_bytes(r.stats.mapped),
                    format_bytes(r.stats.peak_with_mapped),
                    r.on_gpu()   ? (r.nvml_process_bytes > 0 ? format_bytes(r.nvml_process_bytes) : "n/a")
                    : r.vm_hwm > 0 ? format_bytes(r.vm_hwm)
                                   : "n/a",
                    format_bytes(r.floor()),
                    fmt::format("{:.3f}", r.ratio()),
                    reads ? fmt::format("{:.2f} GB/s", r.weight_bytes_per_second() / 1e9) : "-",
                    reads && bandwidth.bytes_per_second > 0
                        ? fmt::format("{:.2f}", fraction_of_bandwidth(r, bandwidth))
                        : "-"});
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t i = 0; i < rows[r].size(); ++i) {
      // The phase name left-aligned, figures right-aligned.
      out += i == 0 ? fmt::format("{:<{}}", rows[r][i], width[i]) : fmt::format("  {:>{}}", rows[r][i], width[i]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace nuvec::tool
