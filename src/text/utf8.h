// UTF-8 as the tokenizers need it: the length of one character, and text
// made valid the way Python's bytes.decode("utf-8", "replace") and Rust's
// String::from_utf8_lossy make it (each maximal invalid subpart, in the
// sense of Unicode's "U+FFFD substitution of maximal subparts", becomes one
// U+FFFD).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nuvec::text {

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// The length of the valid character that starts at text[pos], or 0 if the
// bytes there do not start one (a stray continuation byte, an overlong or
// surrogate form, a truncated sequence).
std::size_t utf8_char_length(std::string_view text, std::size_t pos);

// The length of the maximal subpart at text[pos] that could start a valid
// character but does not complete one (at least 1): what one U+FFFD replaces.
std::size_t utf8_invalid_length(std::string_view text, std::size_t pos);

bool utf8_valid(std::string_view text);

// `text` with each maximal invalid subpart replaced by U+FFFD.
std::string utf8_lossy(std::string_view text);

// The code point of a valid character at text[pos] of length `length`.
char32_t utf8_decode(std::string_view text, std::size_t pos, std::size_t length);
void utf8_append(std::string& out, char32_t code_point);

}  // namespace nuvec::text
