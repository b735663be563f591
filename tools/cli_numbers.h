// Numbers given on the command line, checked as text before CLI11 converts
// them, so that "-1" never wraps to 2^64 - 1, "1.5" is not quietly cut to 1
// and an absurd count is refused with its bound before anything is sized by
// it. Each is a CLI::Validator to hang on an option with ->transform() (it
// hands CLI11 the number as plain digits; ->check() would not).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace nuvec::tool {

// The whole number `text` spells: decimal digits, or digits with an exponent
// ("1e9") that still make a whole number; empty for anything else (a sign,
// a fraction, a unit, more than 2^63).
std::optional<std::uint64_t> parse_whole_number(std::string_view text);

// Accepts a whole number in [min, max]; the error names the bound and `unit`.
CLI::Validator whole_number_in(std::uint64_t min, std::uint64_t max, std::string unit);

// --threads: 1 to the CPUs this process may run on (more threads than CPUs
// only make the kernels' workers wait for each other).
CLI::Validator thread_count();
int usable_cpus();

// The most tokens (prompt, generated, context) a command takes: far past any
// model's context (the config reader's bound is 2^24), small enough that a
// sum of two never overflows.
inline constexpr std::uint64_t kMaxTokens = std::uint64_t{1} << 32;

}  // namespace nuvec::tool
