// `nuvec profile-phase` (hidden): one phase of `nuvec profile`, measured in
// this fresh process as the method of docs/design.md says — load, reset_peak(), run
// the phase, report — and printed as one JSON object on stdout.
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli_numbers.h"
#include "command.h"
#include "context_budget.h"
#include "device_option.h"
#include "generation.h"
#include "gpu_generation.h"
#include "lm_prompt.h"
#include "nuvec/error.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/sampler.h"
#include "nuvec/lm/session.h"
#include "nuvec/trace.h"
#include "model_flags.h"
#include "nvml_memory.h"
#include "process_memory.h"
#include "progress_line.h"
#include "profile_report.h"

namespace nuvec::tool {
namespace {

struct PhaseArgs {
  std::string model;
  std::string phase;
  std::size_t prompt_len = 512;
  std::size_t max_new = 128;
  std::size_t prefill_chunk = 512;
  ModelFlags flags;
  std::string trace;
  std::string device = "cpu";
};

std::uint64_t weights_held(const lm::Model& model) {
  return model.checkpoint_bytes();
}

int run_phase(const PhaseArgs& a) {
  if (a.phase != "load" && a.phase != "prefill" && a.phase != "decode") {
    throw InvalidArgument(fmt::format("unknown phase '{}' (load, prefill, decode)", a.phase));
  }
  const DeviceSpec spec = parse_device(a.device);
  if (spec.cuda) refuse_cpu_only_flags(a.flags, false, spec);
  // The statistics are those of the device the model runs on; the
  // checkpoint is mapped on the CPU either way (a GPU's weights are
  // uploaded from there).
  Device& cpu = Device::cpu();
  Device& device = open_device(spec);
  PhaseResult r;
  r.phase = a.phase;
  r.device = spec.name();
  if (spec.cuda) {
    // The CUDA context exists now (the device made it) and nuvec has
    // allocated nothing on it: NVML's figure is the context's own.
    const NvmlReading context = nvml_process_memory();
    r.nvml_context_bytes = context.process_bytes.value_or(0);
    r.nvml_note = context.why;
  }
  apply_before_load(a.flags, device);
  if (!a.trace.empty()) device.start_trace();
  const std::optional<ProcessMemory> baseline = read_process_memory();

  r.baseline_rss = baseline ? baseline->vm_rss : 0;
  std::optional<ProcessMemory> before;
  std::uint64_t allocations_before = 0;
  // The method (docs/design.md): everything before the phase is set up, then the
  // peaks (ours and the OS's) start again from what is held now.
  // (The runtime marks the phases in the trace: load_model "load", the
  // session "prefill" and "decode".)
  const auto start_phase = [&] {
    device.reset_peak();
    r.hwm_reset = reset_peak_resident();
    before = read_process_memory();
    allocations_before = device.memory().system_allocations;
    return std::chrono::steady_clock::now();
  };
  const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };

  std::optional<lm::Model> model;
  std::optional<GpuModel> gpu_model;
  std::unique_ptr<Generation> session;
  // Load: map the checkpoint, and on a GPU upload it (the load phase's time
  // and peaks include the upload). The GPU's weights are its own copy, so
  // the mapping goes once they are there.
  const auto load = [&] {
    model.emplace(lm::load_model(cpu, a.model));
    if (spec.cuda) gpu_model.emplace(device, *model);
  };
  const auto weights_floor = [&] { return gpu_model ? gpu_model->weight_bytes() : weights_held(*model); };
  if (a.phase == "load") {
    const auto t = start_phase();
    load();
    r.seconds = seconds_since(t);
    if (!spec.cuda) apply_after_load(a.flags, device);
    r.floor_weights = weights_floor();
  } else {
    load();
    if (!spec.cuda) apply_after_load(a.flags, device);
    r.floor_weights = weights_floor();
    const lm::ModelConfig config = model->config();
    const std::size_t per_token = model->weight_bytes_per_token();  // as stored: the GPU's copy is the same bytes
    // On a GPU the KV cache holds bf16/f16: 2 bytes an element, as f16 does here.
    check_context(device, config, a.prompt_len + a.max_new,
                  fmt::format("--prompt-len {} + --max-new {}", a.prompt_len, a.max_new),
                  spec.cuda ? lm::KVCachePrecision::f16 : kv_cache_precision(a.flags));
    const std::vector<std::int32_t> prompt = synthetic_prompt(a.prompt_len, config.vocab_size);
    lm::SessionOptions options;
    options.context = a.prompt_len + a.max_new;
    options.prefill_chunk = a.prefill_chunk;
    options.kv_cache = kv_cache_precision(a.flags);
    ProgressLine prefill_progress("prefill");
    options.progress = std::ref(prefill_progress);
    if (gpu_model) {
      session = gpu_model->session(options.context, options.prefill_chunk);
      model.reset();
    } else {
      session = std::make_unique<CpuGeneration>(device, *model, options);
    }
    r.floor_kv_cache = session->kv_cache_bytes();

    if (a.phase == "prefill") {
      const lm::ActivationPlan plan = session->activation_plan(std::min(a.prompt_len, a.prefill_chunk));
      r.floor_intermediate = plan.largest_bytes;
      r.intermediate_name = plan.largest_name;
      if (spec.cuda) {
        // The GPU's first use, untimed (PhaseResult::warmup_seconds): the
        // same prompt, then forgotten. Its buffers stay, as the timed pass's own.
        const auto w = std::chrono::steady_clock::now();
        session->prefill_greedy(prompt);
        session->rewind(0);
        r.warmup_seconds = seconds_since(w);
      }
      const auto t = start_phase();
      session->prefill_greedy(prompt);  // on a GPU: waits for the pass, reading back one id
      r.seconds = seconds_since(t);
      r.tokens = a.prompt_len;
    } else {
      std::int32_t token = session->prefill_greedy(prompt);
      // Decode holds one-row activations: give the prompt-sized ones back
      // to the system, so they are neither held nor counted.
      session->release_activations();
      device.clear_cache();
      const lm::ActivationPlan plan = session->activation_plan(1);
      r.floor_intermediate = plan.largest_bytes;
      r.intermediate_name = plan.largest_name;
      if (spec.cuda) {
        // Untimed, as prefill's: a few steps from the same token (the first
        // launched, then a CUDA graph captured and replayed), then forgotten.
        const auto w = std::chrono::steady_clock::now();
        std::int32_t t = token;
        for (std::size_t i = 0; i < std::min<std::size_t>(a.max_new, 4); ++i) t = session->decode_greedy(t);
        session->rewind(a.prompt_len);
        r.warmup_seconds = seconds_since(w);
      }
      ProgressLine decode_progress("decode");
      const auto t = start_phase();
      std::uint64_t after_first = 0;
      for (std::size_t i = 0; i < a.max_new; ++i) {
        token = session->decode_greedy(token);
        if (i == 0) {
          after_first = device.memory().system_allocations;
        }
        if (i % 8 == 7) decode_progress(i + 1, a.max_new);
      }
      r.seconds = seconds_since(t);
      r.tokens = a.max_new;
      r.weight_bytes_per_token = per_token;
      r.steady_system_allocations = device.memory().system_allocations - after_first;
      r.decode_launch_note = session->decode_launch_note();
    }
  }
  device.mark("end");  // so that a timeline spans the whole phase, not only its last allocation
  r.stats = device.memory();
  if (spec.cuda) {
    const NvmlReading now = nvml_process_memory();
    r.nvml_process_bytes = now.process_bytes.value_or(0);
    if (!now.why.empty()) r.nvml_note = now.why;
  }
  r.system_allocations = r.stats.system_allocations - allocations_before;
  if (const auto after = read_process_memory(); after && before) {
    r.vm_hwm = after->vm_hwm;
    r.private_clean_added = static_cast<std::int64_t>(after->private_clean) - static_cast<std::int64_t>(before->private_clean);
    r.private_dirty_added = static_cast<std::int64_t>(after->private_dirty) - static_cast<std::int64_t>(before->private_dirty);
    r.anonymous_added = static_cast<std::int64_t>(after->anonymous) - static_cast<std::int64_t>(before->anonymous);
  }
  if (!a.trace.empty()) write_trace(a.trace, *device.trace());
  fmt::print("{}\n", to_json(r).dump());
  return 0;
}

}  // namespace

Command add_profile_phase_command(CLI::App& parent) {
  auto a = std::make_shared<PhaseArgs>();
  CLI::App* app = parent.add_subcommand("profile-phase", "One phase of `nuvec profile`, as JSON (internal)");
  app->group("");  // hidden: `nuvec profile` runs it
  app->add_option("MODEL", a->model)->required();
  app->add_option("--phase", a->phase)->required();
  app->add_option("--prompt-len", a->prompt_len)->transform(whole_number_in(1, kMaxTokens, "tokens"));
  app->add_option("--max-new", a->max_new)->transform(whole_number_in(1, kMaxTokens, "tokens"));
  app->add_option("--prefill-chunk", a->prefill_chunk)->transform(whole_number_in(1, kMaxTokens, "tokens"));
  add_model_flags(*app, a->flags);
  app->add_option("--trace", a->trace);
  add_device_option(*app, a->device);
  return {app, [a] { return run_phase(*a); }};
}

}  // namespace nuvec::tool
