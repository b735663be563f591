// As `tokenizers`' DecodeStream: decode a short window of the latest ids
// twice, with and without the new one, and print the difference once it no
// longer ends in U+FFFD (an incomplete character). Decoding from a window
// start rather than from the one new id keeps the decoder's first-token
// rules (Llama 2's stripped leading space) as the full decode has them.
#include "nuvec/text/stream_decoder.h"

#include "text/utf8.h"

namespace nuvec::text {
namespace {
// A character is at most 4 bytes; past that many held tokens the U+FFFD is real.
constexpr std::size_t kMaxHeldTokens = 6;
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string StreamDecoder::push(TokenId id) {
  ids_.push_back(id);
  const std::span<const TokenId> all(ids_);
  const std::string before = tokenizer_.decode(all.subspan(prefix_start_, read_start_ - prefix_start_), skip_special_);
  const std::string now = tokenizer_.decode(all.subspan(prefix_start_), skip_special_);
  const bool incomplete = now.ends_with(kReplacementCharacter) && ids_.size() - read_start_ < kMaxHeldTokens;
  if (now.size() <= before.size() || incomplete || now.compare(0, before.size(), before) != 0) {
    if (ids_.size() - read_start_ >= kMaxHeldTokens && now.compare(0, before.size(), before) != 0) {
      // The window's text changed before what was printed: start a new window here.
      prefix_start_ = read_start_ = ids_.size();
    }
    return {};
  }
  std::string out = now.substr(before.size());
  prefix_start_ = read_start_;
  read_start_ = ids_.size();
  widen_window();
  return out;
}

// A window that starts with tokens whose text is only spaces (SentencePiece's
// lone "▁") loses those spaces to the decoder's leading-whitespace rule, so
// the next piece would come out without them: start it earlier instead, at a
// token with visible text (at most a few tokens back; they are printed).
void StreamDecoder::widen_window() {
  const std::span<const TokenId> all(ids_);
  for (std::size_t back = 0; back < kMaxHeldTokens && prefix_start_ > 0; ++back) {
    const std::string head = tokenizer_.decode(all.subspan(prefix_start_, read_start_ - prefix_start_), skip_special_);
    if (head.find_first_not_of(' ') != std::string::npos) break;
    --prefix_start_;
  }
}

std::string StreamDecoder::finish() {
  const std::span<const TokenId> all(ids_);
  const std::string before = tokenizer_.decode(all.subspan(prefix_start_, read_start_ - prefix_start_), skip_special_);
  const std::string now = tokenizer_.decode(all.subspan(prefix_start_), skip_special_);
  prefix_start_ = read_start_ = ids_.size();
  return now.size() > before.size() ? now.substr(before.size()) : std::string{};
}

}  // namespace nuvec::text
