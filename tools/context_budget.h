// Whether a session of a given context can be made, told before anything is
// allocated for it: the model's own bound (max_position_embeddings) and the
// KV cache's cost against what the memory limit leaves.
#pragma once

#include <cstdint>
#include <string_view>

#include "nuvec/device.h"
#include "nuvec/lm/config.h"
#include "nuvec/lm/session.h"

namespace nuvec::tool {

// The KV cache's bytes for `positions` (keys and values, every layer, at `precision`).
std::uint64_t kv_cache_bytes(const lm::ModelConfig& config, std::uint64_t positions,
                             lm::KVCachePrecision precision);

// InvalidArgument, saying what it would cost, if a context of `positions`
// (`source` says where the number came from, e.g. "--prompt-len 1000 +
// --max-new 32") is past the model's bound or its KV cache would not fit
// under the device's memory limit beside what is in use.
void check_context(const Device& device, const lm::ModelConfig& config, std::uint64_t positions,
                   std::string_view source, lm::KVCachePrecision precision);

}  // namespace nuvec::tool
