// The normalizer steps of tokenizer.json ("Sequence" flattened): Prepend,
// Replace, the Unicode normal forms (utf8proc), Lowercase, Strip.
#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "nuvec/error.h"
#include "text/string_ops.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace nuvec::text {
namespace {

bool ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

std::string normal_form(const std::string& s, int options) {
  if (ascii(s)) return s;  // every normal form leaves ASCII as it is
  utf8proc_uint8_t* result = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &result,
                                          static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n < 0) throw InvalidArgument(std::string("cannot normalize the text: ") + utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(result, &std::free);
  return std::string(reinterpret_cast<const char*>(result), static_cast<std::size_t>(n));
}

std::string lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_char_length(s, i);
    utf8_append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(utf8_decode(s, i, n)))));
    i += n;
  }
  return out;
}


}  // namespace

std::string TokenizerImpl::normalize(std::string_view text) const {
  std::string s(text);
  for (const NormalizerStep& step : normalizer) {
    switch (step.kind) {
      case NormalizerStep::Kind::prepend:
        if (!s.empty()) s.insert(0, step.to);
        break;
      case NormalizerStep::Kind::replace: replace_all(s, step.from, step.to); break;
      case NormalizerStep::Kind::nfc: s = normal_form(s, UTF8PROC_COMPOSE); break;
      case NormalizerStep::Kind::nfd: s = normal_form(s, UTF8PROC_DECOMPOSE); break;
      case NormalizerStep::Kind::nfkc: s = normal_form(s, UTF8PROC_COMPOSE | UTF8PROC_COMPAT); break;
      case NormalizerStep::Kind::nfkd: s = normal_form(s, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); break;
      case NormalizerStep::Kind::lowercase: s = lowercase(s); break;
      case NormalizerStep::Kind::strip: {
        std::size_t b = 0, e = s.size();
        if (step.left) while (b < e && is_space(s[b])) ++b;
        if (step.right) while (e > b && is_space(s[e - 1])) --e;
        s = s.substr(b, e - b);
        break;
      }
    }
  }
  return s;
}

}  // namespace nuvec::text
