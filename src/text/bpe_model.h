// The BPE model: a vocabulary and ranked merges, applied to one pre-token
// at a time. Merges are applied lowest rank first (leftmost among equals),
// as `tokenizers` and SentencePiece do: a heap of candidate pairs over a
// linked list of symbols, so a word of n symbols costs O(n log n) rather than
// the O(n^2) of rescanning for the best pair after every merge. Results for
// short pre-tokens are cached: real text repeats its words.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nuvec/text/tokenizer.h"

namespace nuvec::text {

struct BpeOptions {
  // Symbols are the bytes of the word (a byte-level vocabulary, turned into
  // bytes at load), rather than its UTF-8 characters.
  bool byte_level = false;
  // A character missing from the vocabulary becomes its <0xXX> byte tokens.
  bool byte_fallback = false;
  // Consecutive unknown characters become one unknown token.
  bool fuse_unk = false;
  // A word that is itself in the vocabulary is that token, merges or not (Llama 3).
  bool ignore_merges = false;
  std::optional<TokenId> unk;
};

// A merge: the pair (left, right) becomes `merged`; lower ranks go first.
struct BpeMerge {
  TokenId left = 0, right = 0, merged = 0;
  std::uint32_t rank = 0;
};

class BpeModel {
 public:
  // `vocab`: each id's key as the encoder looks it up (bytes for a
  // byte-level vocabulary); ids not in it are empty strings.
  BpeModel(std::vector<std::string> keys, const std::vector<BpeMerge>& merges, BpeOptions options);

  // Appends the ids of one pre-token (valid UTF-8 unless byte-level).
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;
  std::optional<TokenId> find(std::string_view key) const;
  const BpeOptions& options() const { return options_; }

 private:
  struct MergeTable {  // open addressing on the pair of ids; hot in the merge loop
    std::vector<std::uint64_t> keys;
    std::vector<BpeMerge> values;
    std::uint64_t mask = 0;
    const BpeMerge* find(TokenId left, TokenId right) const;
    void insert(const BpeMerge& merge);
  };
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using StringMap = std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>>;

  void split_symbols(std::string_view word, std::vector<TokenId>& ids, std::vector<std::uint32_t>& lengths) const;
  void merge(std::string_view word, std::vector<TokenId>& out) const;
  void encode_piece(std::string_view word, std::vector<TokenId>& out) const;

  std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> vocab_;
  MergeTable merges_;
  BpeOptions options_;
  TokenId byte_ids_[256];
  // No token has "▁" after another character: a word (Llama 2's whole text,
  // which has no pre-tokenizer) can be cut before each such "▁" without
  // changing what BPE makes of it, and the pieces hit the cache.
  bool cut_before_space_ = false;  // each byte's token: the byte-level symbol, or the <0xXX> fallback; -1 if none

  static constexpr std::size_t kCacheMaxWordBytes = 64;
  static constexpr std::size_t kCacheMaxEntries = 1 << 16;
  mutable std::mutex cache_mutex_;
  mutable StringMap cache_;
};

}  // namespace nuvec::text
