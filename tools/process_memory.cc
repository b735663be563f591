#include "process_memory.h"

#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace nuvec::tool {
namespace {

// "Name:   1234 kB" lines of a /proc file, in bytes.
std::map<std::string, std::uint64_t> read_kb_fields(const char* path) {
  std::map<std::string, std::uint64_t> fields;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream value(line.substr(colon + 1));
    std::uint64_t kb = 0;
    std::string unit;
    if (value >> kb >> unit && unit == "kB") fields[line.substr(0, colon)] = kb * 1024;
  }
  return fields;
}

}  // namespace

std::optional<ProcessMemory> read_process_memory() {
  const auto status = read_kb_fields("/proc/self/status");
  if (!status.contains("VmRSS") || !status.contains("VmHWM")) return std::nullopt;
  ProcessMemory m;
  m.vm_rss = status.at("VmRSS");
  m.vm_hwm = status.at("VmHWM");
  const auto rollup = read_kb_fields("/proc/self/smaps_rollup");
  if (rollup.contains("Private_Clean")) m.private_clean = rollup.at("Private_Clean");
  if (rollup.contains("Private_Dirty")) m.private_dirty = rollup.at("Private_Dirty");
  if (rollup.contains("Anonymous")) m.anonymous = rollup.at("Anonymous");
  return m;
}

bool reset_peak_resident() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace nuvec::tool
