// The flags every command that runs a model takes (run, chat, profile), so a
// person who learned them on one finds them on the others: --threads,
// --memory-limit, --mlock (llama.cpp's: keep the weights in RAM, through the
// device's wired limit), --kv-cache (f32|f16: what the KV cache stores) and
// --quiet (no progress line).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "nuvec/lm/session.h"

namespace nuvec {
class Device;
}

namespace nuvec::tool {

struct ModelFlags {
  int threads = 0;
  std::string memory_limit;
  bool mlock = false;
  bool quiet = false;
  // --kv-cache as given ("f32" or "f16", checked by the option); empty: the
  // library's default (lm::SessionOptions).
  std::string kv_cache;
};

// The KV cache precision --kv-cache asks for.
lm::KVCachePrecision kv_cache_precision(const ModelFlags& flags);

void add_model_flags(CLI::App& app, ModelFlags& flags);
// Before the model is loaded: the kernel threads, the device's memory limit.
void apply_before_load(const ModelFlags& flags, Device& device);
// After: with --mlock, the wired limit raised to everything the device holds
// (the weights' mappings and buffers), so none of it can be swapped out. An
// mlock the system refuses is an error that says how to allow it.
void apply_after_load(const ModelFlags& flags, Device& device);

}  // namespace nuvec::tool
