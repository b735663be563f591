#include "cli_numbers.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace nuvec::tool {

std::optional<std::uint64_t> parse_whole_number(std::string_view text) {
  const std::size_t e = text.find_first_of("eE");
  const std::string_view digits = text.substr(0, e);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  if (e != std::string_view::npos) {
    const std::string_view power = text.substr(e + 1);
    if (power.empty() || power.size() > 2 || power.find_first_not_of("0123456789") != std::string_view::npos) {
      return std::nullopt;
    }
    for (int p = std::stoi(std::string(power)); p > 0; --p) {
      if (value > (std::uint64_t{1} << 63) / 10) return std::nullopt;
      value *= 10;
    }
  }
  if (value > (std::uint64_t{1} << 63)) return std::nullopt;
  return value;
}

CLI::Validator whole_number_in(std::uint64_t min, std::uint64_t max, std::string unit) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<std::uint64_t> value = parse_whole_number(text);
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        if (!value && digits) return fmt::format("{} {} is out of range: {} to {}", text, unit, min, max);
        if (!value) return fmt::format("'{}' is not a whole number of {} (write digits, as in {})", text, unit, min);
        if (*value < min || *value > max) return fmt::format("{} {} is out of range: {} to {}", text, unit, min, max);
        text = std::to_string(*value);  // what CLI11 then converts: digits only
        return {};
      },
      fmt::format("{}..{}", min, max), "whole number");
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

CLI::Validator thread_count() {
  const int cpus = usable_cpus();
  return CLI::Validator(
      [cpus](std::string& text) -> std::string {
        const std::optional<std::uint64_t> value = parse_whole_number(text);
        if (!value || *value < 1 || *value > static_cast<std::uint64_t>(cpus)) {
          return fmt::format("'{}' threads: give 1 to {}, the CPUs this process may run on", text, cpus);
        }
        text = std::to_string(*value);
        return {};
      },
      fmt::format("1..{}", cpus), "threads");
}

}  // namespace nuvec::tool
