// Decoding tokens one at a time, as they are generated, into text that can
// be printed at once: never half a UTF-8 character (a character whose bytes
// come in several byte-fallback or byte-level tokens waits for the rest),
// and the same text in total as decoding all the ids at once.
#pragma once

#include <string>
#include <vector>

#include "nuvec/text/tokenizer.h"

namespace nuvec::text {

class StreamDecoder {
 public:
  // skip_special as Tokenizer::decode's.
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = true);

  // The text that `id` completes; empty while a character is incomplete.
  std::string push(TokenId id);
  // What is still held back (an incomplete character at the end, as U+FFFD).
  std::string finish();

 private:
  void widen_window();
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<TokenId> ids_;
  std::size_t prefix_start_ = 0;  // decoding starts here, so that leading-space rules match the full decode
  std::size_t read_start_ = 0;    // the text of ids_[prefix_start_, read_start_) is already out
};

}  // namespace nuvec::text
