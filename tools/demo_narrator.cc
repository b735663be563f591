#include "demo_narrator.h"

#include <fmt/core.h>

#include "stats_table.h"

namespace nuvec::tool {

Narrator::Narrator(const Device& device) : device_(device), last_(device.memory()) {}

void Narrator::step(std::string_view call, std::string_view what, std::string_view why,
                    std::initializer_list<std::string_view> watch) {
  const MemoryStats now = device_.memory();
  std::vector<std::string_view> shown = {"active", "peak_with_mapped"};
  shown.insert(shown.end(), watch.begin(), watch.end());

  fmt::print("\n[{}] {}\n", ++number_, call);
  fmt::print("{}", changes_table(last_, now, shown));
  fmt::print("    → {}: {} — {}\n", what, summarize_changes(last_, now, watch), why);
  last_ = now;
}

void Narrator::note(std::string_view text) const { fmt::print("    {}\n", text); }

}  // namespace nuvec::tool
