#include "context_budget.h"

#include <cstdint>

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/memory.h"

namespace nuvec::tool {

std::uint64_t kv_cache_bytes(const lm::ModelConfig& config, std::uint64_t positions,
                             lm::KVCachePrecision precision) {
  // Saturates: a hostile position count must not wrap to a small cost.
  const std::uint64_t per_position =
      2 * config.num_hidden_layers * config.kv_dim() * lm::kv_cache_element_bytes(precision);
  if (per_position != 0 && positions > UINT64_MAX / per_position) return UINT64_MAX;
  return per_position * positions;
}

void check_context(const Device& device, const lm::ModelConfig& config, std::uint64_t positions,
                   std::string_view source, lm::KVCachePrecision precision) {
  const std::uint64_t needs = kv_cache_bytes(config, positions, precision);
  if (positions > config.max_position_embeddings) {
    throw InvalidArgument(fmt::format(
        "a context of {} positions ({}) is past the model's max_position_embeddings ({}, in its config.json) "
        "and would need {} of KV cache: ask for fewer tokens",
        positions, source, config.max_position_embeddings, format_bytes(needs)));
  }
  const MemoryStats s = device.memory();
  const std::uint64_t used = s.active + s.mapped;
  if (used > s.memory_limit || needs > s.memory_limit - used) {
    throw InvalidArgument(fmt::format(
        "a context of {} positions ({}) needs {} of KV cache; the memory limit is {} and {} is in use "
        "(the model's weights): ask for fewer tokens or raise NUVEC_MEMORY_LIMIT",
        positions, source, format_bytes(needs), format_bytes(s.memory_limit), format_bytes(used)));
  }
}

}  // namespace nuvec::tool
