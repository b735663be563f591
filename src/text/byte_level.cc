#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace nuvec::text {
namespace {

// Printable Latin-1 bytes stand for themselves; the other 68 bytes are
// given the code points from U+0100 on, in byte order.
struct Alphabet {
  std::array<std::string, 256> spelling;
  std::array<int, 512> byte_of;  // code point -> byte, -1 if none (all code points are below 0x144)

  Alphabet() {
    byte_of.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t c = printable ? static_cast<char32_t>(b) : next++;
      utf8_append(spelling[b], c);
      byte_of[c] = b;
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

std::string_view byte_level_char(unsigned char b) { return alphabet().spelling[b]; }

std::optional<std::string> byte_level_bytes(std::string_view token) {
  const Alphabet& a = alphabet();
  std::string out;
  for (std::size_t i = 0; i < token.size();) {
    const std::size_t n = utf8_char_length(token, i);
    if (n == 0) return std::nullopt;
    const char32_t c = utf8_decode(token, i, n);
    if (c >= a.byte_of.size() || a.byte_of[c] < 0) return std::nullopt;
    out.push_back(static_cast<char>(a.byte_of[c]));
    i += n;
  }
  return out;
}

}  // namespace nuvec::text
