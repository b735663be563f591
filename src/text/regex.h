// A pre-tokenizer's regular expression, through PCRE2 (Unicode classes such
// as \p{L}, JIT-compiled). The patterns are those of tokenizer.json files,
// written for Oniguruma; the ones of GPT-2, Llama 3 and Qwen2/3 mean the
// same in PCRE2.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nuvec::text {

class Regex {
 public:
  // InvalidArgument naming the pattern and PCRE2's complaint if it does not compile.
  explicit Regex(const std::string& pattern);
  Regex(Regex&&) noexcept;
  ~Regex();

  // Every non-overlapping match in `text` (valid UTF-8), as [start, end) byte offsets.
  void find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& matches) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8
};

}  // namespace nuvec::text
