#include "progress_line.h"

#include <unistd.h>

#include <atomic>

#include <fmt/format.h>

namespace nuvec::tool {
namespace {
std::atomic<bool> quiet_{false};
}

void set_quiet(bool quiet) { quiet_ = quiet; }

ProgressLine::ProgressLine(std::string what, std::string unit)
    : what_(std::move(what)), unit_(std::move(unit)), on_(!quiet_ && isatty(STDERR_FILENO) == 1) {}

void ProgressLine::operator()(std::size_t done, std::size_t total) const {
  if (!on_) return;
  fmt::print(stderr, "\r  {} {}/{} {}", what_, done, total, unit_);
  shown_ = true;
}

void ProgressLine::finish() {
  if (shown_) fmt::print(stderr, "\r\033[K");
  on_ = shown_ = false;
}

ProgressLine::~ProgressLine() { finish(); }

}  // namespace nuvec::tool
