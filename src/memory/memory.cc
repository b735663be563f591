// Size arithmetic and size parsing shared by every device.
#include "nuvec/memory.h"

#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "memory/size_classes.h"
#include "nuvec/error.h"

namespace nuvec {

std::size_t page_size() {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

namespace {

// Rounds `len` up to a multiple of `step` (a power of two); empty on overflow.
std::optional<std::size_t> round_up(std::size_t len, std::size_t step) {
  if (len > std::numeric_limits<std::size_t>::max() - (step - 1)) return std::nullopt;
  return (len + step - 1) & ~(step - 1);
}

}  // namespace

std::optional<std::size_t> allocation_size(std::size_t len) {
  return detail::SizeClasses{256, page_size()}.round(len);
}

std::size_t mapping_size(std::uint64_t len) {
  const auto rounded = len > std::numeric_limits<std::size_t>::max() ? std::nullopt
                                                                     : round_up(len, page_size());
  if (!rounded) {
    throw InvalidArgument(fmt::format("mapping_size: a file of {} bytes cannot be mapped on this system", len));
  }
  return *rounded;
}

std::size_t parse_size(std::string_view text, std::string_view what) {
  const auto fail = [&](std::string_view why) -> std::size_t {
    throw InvalidArgument(fmt::format(
        "{}: cannot read '{}' as a size ({}); write bytes like 4096, 512MiB, 8GiB or 1.5GB", what, text, why));
  };
  std::string_view rest = text;
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
  if (rest.empty()) return fail("it is empty");
  if (rest.front() == '-') return fail("it is negative");

  // The number: digits with at most one decimal point.
  std::size_t end = 0;
  bool seen_point = false;
  while (end < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[end])) || rest[end] == '.')) {
    if (rest[end] == '.') {
      if (seen_point) return fail("it has two decimal points");
      seen_point = true;
    }
    ++end;
  }
  const std::string_view number = rest.substr(0, end);
  if (number.empty() || number == ".") return fail("it does not start with a number");
  std::string_view unit = rest.substr(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);

  std::string lower(unit);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  struct Unit {
    std::string_view name;
    double factor;
  };
  static constexpr Unit kUnits[] = {
      {"", 1.0},          {"b", 1.0},
      {"k", 1024.0},      {"kib", 1024.0},           {"kb", 1e3},
      {"m", 1048576.0},   {"mib", 1048576.0},        {"mb", 1e6},
      {"g", 1073741824.0}, {"gib", 1073741824.0},    {"gb", 1e9},
      {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12},
      {"p", 1125899906842624.0}, {"pib", 1125899906842624.0}, {"pb", 1e15},
      {"e", 1152921504606846976.0}, {"eib", 1152921504606846976.0}, {"eb", 1e18},
  };
  const Unit* found = nullptr;
  for (const Unit& u : kUnits) {
    if (lower == u.name) found = &u;
  }
  if (found == nullptr) return fail(fmt::format("unknown unit '{}'", unit));

  // A number of bytes is whole: "1.5" must not quietly become 1 byte.
  if (seen_point && found->factor == 1.0) return fail("a number of bytes must be whole; add a unit, as in 1.5GiB");
  if (found->factor == 1.0) {
    std::size_t value = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || ptr != number.data() + number.size()) return fail("it does not fit in 64 bits");
    return value;
  }
  double value = 0;
  const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size()) return fail("it is not a number");
  const double bytes = std::floor(value * found->factor);
  // 2^64 is exactly representable; anything at or above it does not fit.
  if (!(bytes < 18446744073709551616.0)) return fail("it does not fit in 64 bits");
  return static_cast<std::size_t>(bytes);
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

}  // namespace nuvec
