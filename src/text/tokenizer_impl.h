// What a tokenizer is made of, whichever file it came from: added tokens,
// normalizer steps, pre-tokenizer steps, the BPE model, the post-processor's
// special tokens and the decoder steps. tokenizer_json.cc and
// tokenizer_gguf.cc build one; tokenizer.cc runs it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "nuvec/text/tokenizer.h"
#include "text/bpe_model.h"
#include "text/regex.h"

namespace nuvec::text {

// A token matched in the raw text before anything else (`added_tokens`).
struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool special = false;
  bool lstrip = false, rstrip = false;  // swallow the whitespace before / after it
  bool single_word = false;             // only where not inside a word
};

struct NormalizerStep {
  enum class Kind { prepend, replace, nfc, nfd, nfkc, nfkd, lowercase, strip } kind;
  NormalizerStep(Kind k, std::string f = {}, std::string t = {}) : kind(k), from(std::move(f)), to(std::move(t)) {}
  std::string from, to;            // prepend: `to`; replace: `from` -> `to`
  bool left = false, right = false;  // strip
};

struct PreTokenizerStep {
  enum class Kind { split, byte_level, metaspace } kind;
  explicit PreTokenizerStep(Kind k) : kind(k) {}
  // split (and byte_level's GPT-2 pattern when use_regex)
  std::shared_ptr<const Regex> regex;
  enum class Behavior { isolated, removed, merged_with_previous, merged_with_next, contiguous } behavior =
      Behavior::isolated;
  bool add_prefix_space = false;  // byte_level
  // metaspace
  std::string replacement = "\xE2\x96\x81";
  enum class Prepend { always, first, never } prepend = Prepend::always;
  bool split = true;
};

struct DecoderStep {
  enum class Kind { byte_level, replace, byte_fallback, fuse, strip, metaspace } kind;
  DecoderStep(Kind k, std::string f = {}, std::string t = {}) : kind(k), from(std::move(f)), to(std::move(t)) {}
  std::string from, to;  // replace
  std::string content;   // strip: the character stripped
  std::size_t start = 0, stop = 0;
  bool prepend_space = false;  // metaspace: the first token's leading space goes
};

class SentencePieceModel;  // text/sentencepiece_model.h

class TokenizerImpl {
 public:
  std::string source;
  // Each id's spelling in the file, and whether it is an added special token.
  std::vector<std::string> tokens;
  std::vector<bool> special;
  std::vector<AddedToken> added;
  std::vector<NormalizerStep> normalizer;
  std::vector<PreTokenizerStep> pre_tokenizer;
  std::unique_ptr<BpeModel> model;
  // A tokenizer.model: the stretches between added tokens are encoded and
  // decoded by libsentencepiece instead of normalizer, pre-tokenizer, BPE
  // model and decoder steps (which are then empty).
  std::shared_ptr<const SentencePieceModel> sentencepiece;
  std::vector<TokenId> prefix, suffix;  // the post-processor's tokens around a single sequence
  std::vector<DecoderStep> decoder;
  std::optional<TokenId> bos, eos;
  std::vector<TokenId> stop_ids;
  std::string chat_template;

  // Called once built: indexes the added tokens by first byte.
  void finish();

  std::vector<TokenId> encode(std::string_view text, bool add_special) const;
  std::string decode(std::span<const TokenId> ids, bool skip_special) const;

 private:
  std::string decode_sentencepiece(std::span<const TokenId> ids, bool skip_special) const;
  void encode_section(std::string_view section, bool first, std::vector<TokenId>& out) const;
  std::string normalize(std::string_view text) const;
  // Added token ids that start with each byte, longest first.
  std::vector<std::vector<std::size_t>> added_by_first_byte_;
};

// GPT-2's pattern, which ByteLevel(use_regex: true) splits with.
std::shared_ptr<const Regex> gpt2_pre_tokenizer_regex();

// tokenizer_config.json's `key` (bos_token, eos_token, ...), which it spells
// as a string or as {"content": ...}; empty where absent or neither.
std::optional<std::string> config_token(const nlohmann::json& config, const char* key);

}  // namespace nuvec::text
