#include "text/utf8.h"

namespace nuvec::text {
namespace {

// The valid range of the second byte after a lead byte (Unicode's table 3-7);
// the later continuation bytes are always 0x80..0xBF.
struct LeadByte {
  std::size_t length;
  unsigned char second_low, second_high;
};

LeadByte lead_byte(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};  // no surrogates
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};  // 0x80..0xC1, 0xF5..0xFF never start a character
}

// How many bytes from pos belong to a (possibly incomplete) well-formed prefix.
std::size_t well_formed_prefix(std::string_view text, std::size_t pos, std::size_t* full_length) {
  const LeadByte lead = lead_byte(static_cast<unsigned char>(text[pos]));
  *full_length = lead.length;
  if (lead.length <= 1) return lead.length;
  std::size_t n = 1;
  for (; n < lead.length && pos + n < text.size(); ++n) {
    const auto c = static_cast<unsigned char>(text[pos + n]);
    const unsigned char low = n == 1 ? lead.second_low : 0x80;
    const unsigned char high = n == 1 ? lead.second_high : 0xBF;
    if (c < low || c > high) break;
  }
  return n;
}

}  // namespace

std::size_t utf8_char_length(std::string_view text, std::size_t pos) {
  std::size_t full = 0;
  const std::size_t n = well_formed_prefix(text, pos, &full);
  return n == full ? n : 0;
}

std::size_t utf8_invalid_length(std::string_view text, std::size_t pos) {
  std::size_t full = 0;
  const std::size_t n = well_formed_prefix(text, pos, &full);
  return n == 0 ? 1 : n;
}

bool utf8_valid(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8_char_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      out.push_back(text[i++]);
      continue;
    }
    const std::size_t n = utf8_char_length(text, i);
    if (n != 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append(kReplacementCharacter);
      i += utf8_invalid_length(text, i);
    }
  }
  return out;
}

char32_t utf8_decode(std::string_view text, std::size_t pos, std::size_t length) {
  const auto b = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(text[pos + k])); };
  switch (length) {
    case 1: return b(0);
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace nuvec::text
