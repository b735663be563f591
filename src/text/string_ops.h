// Small string helpers the tokenizer's normalizers, pre-tokenizers and
// decoders share.
#pragma once

#include <string>
#include <string_view>

namespace nuvec::text {

// Every occurrence of `from` in `s` replaced by `to`, left to right, in
// one pass (a replacement is never searched again).
inline void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  std::size_t pos = 0;
  for (std::size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos).append(to);
  }
  if (pos == 0) return;
  out.append(s, pos);
  s = std::move(out);
}

// ASCII white space, as C's isspace in the "C" locale (no locale lookup).
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace nuvec::text
