// Whether the integer path runs here: its two environment settings, read
// once and checked (a value that is not understood is refused, InvalidArgument
// naming the variable, rather than silently taken as the default or as 0),
// and the CPU. Plain code: it is asked on every CPU before any product.
#include <charconv>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/quant_dot.h"
#include "nuvec/error.h"

namespace nuvec::lm::kernels::detail {
namespace {

QuantDotSettings read_settings() {
  QuantDotSettings s;
  if (const char* env = std::getenv("NUVEC_QUANT_DOT"); env != nullptr) {
    const std::string_view value = env;
    if (value != "on" && value != "off") {
      throw InvalidArgument(fmt::format(
          "NUVEC_QUANT_DOT={}: expected on (the integer path where the CPU has AVX-512 VNNI, the default) or off "
          "(the f32 path, to measure it)",
          value));
    }
    s.on = value == "on";
  }
  if (const char* env = std::getenv("NUVEC_QUANT_PREFETCH"); env != nullptr) {
    const std::string_view value = env;
    std::size_t bytes = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), bytes);
    if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || bytes > kMaxQuantPrefetch) {
      throw InvalidArgument(fmt::format(
          "NUVEC_QUANT_PREFETCH={}: expected a whole number of bytes from 0 (no prefetch) to {} (how far ahead "
          "the Q8_0/Q4_0 products prefetch their weights; unset: {})",
          value, kMaxQuantPrefetch, kQuantPrefetch));
    }
    s.prefetch_bytes = bytes;
  }
  return s;
}

}  // namespace

const QuantDotSettings& quant_dot_settings() {
  // A refusal throws out of the initialiser, so the next call reads again
  // and refuses again: no product ever runs on an unchecked value.
  static const QuantDotSettings settings = read_settings();
  return settings;
}

bool quant_dot_supported() {
  // isa_allowed(avx512) first: it includes the OS's saving of the AVX-512
  // state, which the VNNI flag alone does not.
  return quant_dot_settings().on && isa_allowed(Isa::avx512) && __builtin_cpu_supports("avx512vnni");
}

}  // namespace nuvec::lm::kernels::detail
