// Tells the demo's story: after each step, the statistics that changed and one
// line saying what changed and why.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/device.h"
#include "nuvec/memory_stats.h"

namespace nuvec::tool {

class Narrator {
 public:
  explicit Narrator(const Device& device);

  // Prints, for the step just done:
  //   [n] <call>
  //       a table of the fields that changed since the previous step, plus
  //       active, peak_with_mapped and `watch`
  //       → <what>: <the changes> — <why>
  void step(std::string_view call, std::string_view what, std::string_view why,
            std::initializer_list<std::string_view> watch = {});

  // An indented remark under the current step (no statistics).
  void note(std::string_view text) const;

  // The statistics as of the last step.
  const MemoryStats& last() const { return last_; }

 private:
  const Device& device_;
  MemoryStats last_;
  int number_ = 0;
};

}  // namespace nuvec::tool
