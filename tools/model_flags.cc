#include "model_flags.h"

#include <fmt/format.h>

#include "cli_numbers.h"
#include "nuvec/lm/kernels.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"
#include "progress_line.h"

namespace nuvec::tool {

void add_model_flags(CLI::App& app, ModelFlags& flags) {
  app.add_option("--threads", flags.threads, "kernel threads (default: the CPUs this process may use)")
      ->transform(thread_count());
  app.add_option("--memory-limit", flags.memory_limit,
                 "hard limit on the model's memory, e.g. 8GiB (default: NUVEC_MEMORY_LIMIT, else physical memory)");
  app.add_flag("--mlock", flags.mlock, "keep the weights in RAM (wire them: mlock), as llama.cpp's --mlock");
  app.add_option("--kv-cache", flags.kv_cache,
                 fmt::format("what the KV cache stores keys and values as: f32 or f16 (half the memory; "
                             "default: {})",
                             lm::kv_cache_precision_name(lm::SessionOptions{}.kv_cache)))
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (value == "f32" || value == "f16") return {};
            return fmt::format("takes f32 or f16 (what the KV cache stores), not '{}'", value);
          },
          "f32|f16", "kv cache precision"));
  app.add_flag("--quiet,-q", flags.quiet, "no progress line on stderr");
}

lm::KVCachePrecision kv_cache_precision(const ModelFlags& flags) {
  if (flags.kv_cache.empty()) return lm::SessionOptions{}.kv_cache;
  return flags.kv_cache == "f16" ? lm::KVCachePrecision::f16 : lm::KVCachePrecision::f32;
}

void apply_before_load(const ModelFlags& flags, Device& device) {
  set_quiet(flags.quiet);
  if (flags.threads > 0) lm::kernels::set_threads(flags.threads);
  if (!flags.memory_limit.empty()) device.set_memory_limit(parse_size(flags.memory_limit, "--memory-limit"));
}

void apply_after_load(const ModelFlags& flags, Device& device) {
  if (!flags.mlock) return;
  const MemoryStats s = device.memory();
  try {
    device.set_wired_limit(s.active_with_mapped);
  } catch (const std::exception& e) {
    throw InvalidArgument(fmt::format(
        "--mlock: cannot wire the model's {} ({}); allow the process to lock that much (`ulimit -l`, memlock in "
        "/etc/security/limits.conf, `docker run --ulimit memlock=-1`) or run without --mlock",
        format_bytes(s.active_with_mapped), e.what()));
  }
}

}  // namespace nuvec::tool
