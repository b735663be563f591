// Printing and JSON for MemoryStats, all through for_each_field.
#include <ostream>

#include "nuvec/memory_stats.h"
#include "nuvec/memory_stats_json.h"

namespace nuvec {

std::ostream& operator<<(std::ostream& os, const MemoryStats& s) {
  os << "MemoryStats{";
  const char* separator = "";
  for_each_field(s, [&](const char* name, const auto& value) {
    os << separator << name << '=' << value;
    separator = ", ";
  });
  return os << '}';
}

void to_json(nlohmann::json& j, const MemoryStats& s) {
  j = nlohmann::json::object();
  for_each_field(s, [&](const char* name, const auto& value) { j[name] = value; });
}

void from_json(const nlohmann::json& j, MemoryStats& s) {
  MemoryStats out;
  for_each_field(out, [&](const char* name, auto& value) { j.at(name).get_to(value); });
  s = out;
}

std::string to_json(const MemoryStats& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();  // keeps the fields' order
  for_each_field(s, [&](const char* name, const auto& value) { j[name] = value; });
  return j.dump();
}

}  // namespace nuvec
