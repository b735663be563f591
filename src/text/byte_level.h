// GPT-2's byte-level alphabet: each of the 256 bytes spelt as one printable
// character, so that a vocabulary of strings can hold every byte. nuvec
// turns a byte-level vocabulary back into raw bytes when it loads it, and
// runs BPE on the bytes of the text (no mapping on every encode).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nuvec::text {

// The character byte `b` is spelt with (UTF-8).
std::string_view byte_level_char(unsigned char b);

// The raw bytes of a byte-level spelling ("Ġthe" -> " the"); empty if some
// character of `token` is not in the alphabet.
std::optional<std::string> byte_level_bytes(std::string_view token);

}  // namespace nuvec::text
