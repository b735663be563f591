// Running this program again as a child (through /proc/self/exe), so that a
// measurement starts in a fresh process: its stdout captured, its stderr
// left on ours (progress and errors go straight to the user).
#pragma once

#include <string>
#include <vector>

namespace nuvec::tool {

struct ChildResult {
  int exit_status = -1;  // the exit status, or 128 + signal
  std::string out;       // everything it wrote to stdout
};

// Runs /proc/self/exe with `args` (not including argv[0]) and waits.
// InvalidArgument if it cannot be started.
ChildResult run_self(const std::vector<std::string>& args);

}  // namespace nuvec::tool
