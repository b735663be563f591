// nlohmann::json conversion for MemoryStats (ADL: `nlohmann::json j = stats;`).
#pragma once

#include <nlohmann/json.hpp>

#include "nuvec/memory_stats.h"

namespace nuvec {

void to_json(nlohmann::json& j, const MemoryStats& s);
// Reads every field; a missing or non-integer field is nlohmann's type_error.
void from_json(const nlohmann::json& j, MemoryStats& s);

}  // namespace nuvec
