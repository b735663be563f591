#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex.h"

#include <pcre2.h>

#include <fmt/format.h>

#include "nuvec/error.h"

namespace nuvec::text {
namespace {

pcre2_code* code_of(void* p) { return static_cast<pcre2_code*>(p); }

// One match-data block per thread, grown to the largest pattern's needs.
struct MatchData {
  pcre2_match_data* data = pcre2_match_data_create(4, nullptr);
  ~MatchData() { pcre2_match_data_free(data); }
};

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw InvalidArgument(fmt::format("the pre-tokenizer pattern '{}' does not compile at offset {}: {}", pattern,
                                      offset, reinterpret_cast<const char*>(message)));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT (unsupported CPU) matching is slower, not wrong
  code_ = code;
}

Regex::Regex(Regex&& other) noexcept : pattern_(std::move(other.pattern_)), code_(std::exchange(other.code_, nullptr)) {}

Regex::~Regex() { pcre2_code_free(code_of(code_)); }

void Regex::find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& matches) const {
  thread_local MatchData match;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(code_of(code_), subject, text.size(), start, PCRE2_NO_UTF_CHECK, match.data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw InvalidArgument(fmt::format("the pre-tokenizer pattern '{}' failed on a text of {} bytes: {}", pattern_,
                                        text.size(), reinterpret_cast<const char*>(message)));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.data);
    const std::size_t s = ovector[0], e = ovector[1];
    if (e > s) {
      matches.emplace_back(s, e);
      start = e;
    } else {  // an empty match: step over one character
      if (s >= text.size()) return;
      start = s + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
    }
  }
}

}  // namespace nuvec::text
