// A SentencePiece model (a `tokenizer.model` file: BPE or unigram, with its
// own normalizer and byte fallback), run by Debian's libsentencepiece: the
// reference implementation, so ids are the ones the model was trained with.
// This wrapper only keeps the library's types out of the tokenizer's headers.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/text/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace nuvec::text {

class SentencePieceModel {
 public:
  // The bytes of a tokenizer.model (a serialized ModelProto). FormatError
  // naming `name` if the library refuses them.
  SentencePieceModel(std::string_view serialized, const std::filesystem::path& name);
  ~SentencePieceModel();
  SentencePieceModel(const SentencePieceModel&) = delete;
  SentencePieceModel& operator=(const SentencePieceModel&) = delete;

  // Appends the ids of `text` (valid UTF-8), with the model's dummy-prefix
  // and whitespace rules, no BOS/EOS. Safe on several threads at once.
  void encode(std::string_view text, std::vector<TokenId>& out) const;
  // The text of ids of ordinary pieces: "▁" as spaces, byte pieces as bytes
  // (U+FFFD where they do not form UTF-8), the leading dummy-prefix space gone.
  std::string decode(std::span<const TokenId> ids) const;

  std::size_t size() const;
  std::string piece(TokenId id) const;
  bool is_control(TokenId id) const;
  bool is_unknown(TokenId id) const;
  // -1 where the model has none.
  TokenId bos_id() const;
  TokenId eos_id() const;

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::filesystem::path name_;
};

}  // namespace nuvec::text
