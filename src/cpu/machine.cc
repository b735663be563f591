// What the machine offers: physical memory, container-aware (Linux).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "nuvec/memory.h"

namespace nuvec {
namespace {

std::optional<std::size_t> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return static_cast<std::size_t>(std::stoull(word));
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<std::size_t> mem_total() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return std::nullopt;
}

// The lowest memory limit on this process's cgroup path: cgroup v2's
// memory.max at each level, else cgroup v1's memory.limit_in_bytes.
std::optional<std::size_t> cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::optional<std::size_t> lowest;
  const auto consider = [&](std::optional<std::size_t> v) {
    if (v && (!lowest || *v < *lowest)) lowest = v;
  };
  while (std::getline(in, line)) {
    // "hierarchy-id:controllers:path"
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.empty()) {  // v2: walk from the process's cgroup up to the root
      for (;;) {
        consider(read_number("/sys/fs/cgroup" + path + "/memory.max"));
        if (path.empty() || path == "/") break;
        path = path.substr(0, path.rfind('/'));
      }
    } else if (controllers.find("memory") != std::string::npos) {
      consider(read_number("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"));
      consider(read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
    }
  }
  return lowest;
}

}  // namespace

std::size_t physical_memory() {
  static const std::size_t bytes = [] {
    const auto total = mem_total();
    const auto limit = cgroup_limit();
    if (total && limit) return std::min(*total, *limit);
    if (total) return *total;
    if (limit) return *limit;
    return std::size_t{0};
  }();
  return bytes;
}

}  // namespace nuvec
