// A progress line on stderr during long work ("prefill 1024/4096 tokens"):
// rewritten in place with "\r", cleared when the work ends. Only when stderr
// is a terminal (a log file or a pipe gets nothing) and --quiet was not given.
#pragma once

#include <cstddef>
#include <string>

namespace nuvec::tool {

// --quiet: no progress lines for the rest of the process.
void set_quiet(bool quiet);

class ProgressLine {
 public:
  explicit ProgressLine(std::string what, std::string unit = "tokens");
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine();
  void operator()(std::size_t done, std::size_t total) const;
  // Clears the line and prints no more (before other output goes to the terminal).
  void finish();

 private:
  std::string what_, unit_;
  bool on_;
  mutable bool shown_ = false;
};

}  // namespace nuvec::tool
