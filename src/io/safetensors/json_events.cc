#include "io/safetensors/json_events.h"

#include <algorithm>

#include <fmt/format.h>

#include "nuvec/input_file.h"

namespace nuvec::io::safetensors_detail {

std::uint64_t JsonText::string_start() const {
  // The closing quote is the char before read_to. Inside a valid JSON string
  // a quote is always escaped, that is preceded by an odd run of
  // backslashes; the first quote before it with an even run opens it.
  const std::size_t closing = static_cast<std::size_t>(read_to_ - text_.data()) - 1;
  for (std::size_t i = closing; i-- > 0;) {
    if (text_[i] != '"') continue;
    std::size_t backslashes = 0;
    while (backslashes < i && text_[i - 1 - backslashes] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return file_offset_ + i;
  }
  return file_offset_;
}

std::uint64_t JsonText::value_start() const {
  const std::size_t at = text_.find_first_not_of(" \t\r\n");
  return file_offset_ + (at == std::string_view::npos ? text_.size() : at);
}

void JsonText::syntax_error(std::size_t position, const nlohmann::json::exception& error) const {
  // nlohmann's message starts "[json.exception.parse_error.101] parse error
  // at line 1, column 9: ..."; the offset we give says where already.
  std::string_view what = error.what();
  if (const auto colon = what.find(": "); colon != std::string_view::npos) what.remove_prefix(colon + 2);
  const std::uint64_t at = std::min<std::uint64_t>(position == 0 ? 0 : position - 1, text_.size());
  format_error(file_, file_offset_ + at, fmt::format("invalid JSON: {}", what));
}

std::string in_quotes(std::string_view text, std::size_t limit) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > limit) out += "...";
  out += '"';
  return out;
}

}  // namespace nuvec::io::safetensors_detail
