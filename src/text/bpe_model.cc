#include "text/bpe_model.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "text/utf8.h"

namespace nuvec::text {
namespace {

std::uint64_t pair_key(TokenId left, TokenId right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

std::uint64_t mix(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
constexpr std::string_view kSpace = "\xE2\x96\x81";  // ▁

}  // namespace

const BpeMerge* BpeModel::MergeTable::find(TokenId left, TokenId right) const {
  if (keys.empty()) return nullptr;
  const std::uint64_t key = pair_key(left, right);
  for (std::uint64_t i = mix(key) & mask;; i = (i + 1) & mask) {
    if (keys[i] == key) return &values[i];
    if (keys[i] == kEmpty) return nullptr;
  }
}

void BpeModel::MergeTable::insert(const BpeMerge& merge) {
  const std::uint64_t key = pair_key(merge.left, merge.right);
  for (std::uint64_t i = mix(key) & mask;; i = (i + 1) & mask) {
    if (keys[i] == key) return;  // a repeated merge keeps its first (lowest) rank
    if (keys[i] == kEmpty) {
      keys[i] = key;
      values[i] = merge;
      return;
    }
  }
}

BpeModel::BpeModel(std::vector<std::string> keys, const std::vector<BpeMerge>& merges, BpeOptions options)
    : options_(options) {
  vocab_.reserve(keys.size());
  cut_before_space_ = !options.byte_level;
  for (const std::string& key : keys) {
    for (std::size_t at = key.find(kSpace, 1); at != std::string::npos && cut_before_space_; at = key.find(kSpace, at + 1)) {
      if (!std::string_view(key).substr(0, at).ends_with(kSpace)) cut_before_space_ = false;
    }
  }
  for (std::size_t id = 0; id < keys.size(); ++id) {
    if (!keys[id].empty()) vocab_.emplace(std::move(keys[id]), static_cast<TokenId>(id));
  }
  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(16, merges.size() * 2));
  merges_.keys.assign(capacity, kEmpty);
  merges_.values.resize(capacity);
  merges_.mask = capacity - 1;
  for (const BpeMerge& m : merges) merges_.insert(m);
  for (int b = 0; b < 256; ++b) {
    std::optional<TokenId> id;
    if (options_.byte_level) {
      id = find(std::string(1, static_cast<char>(b)));
    } else if (options_.byte_fallback) {
      id = find(fmt::format("<0x{:02X}>", b));
    }
    byte_ids_[b] = id.value_or(-1);
  }
}

std::optional<TokenId> BpeModel::find(std::string_view key) const {
  const auto it = vocab_.find(key);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

// The word's first symbols: bytes or characters, with their ids; a
// character outside the vocabulary becomes its byte tokens or the unknown
// token (lengths[i] == 0 marks a symbol that merges with nothing).
void BpeModel::split_symbols(std::string_view word, std::vector<TokenId>& ids,
                             std::vector<std::uint32_t>& lengths) const {
  bool last_unknown = false;
  for (std::size_t i = 0; i < word.size();) {
    std::size_t n = 1;
    if (!options_.byte_level) {
      n = utf8_char_length(word, i);
      if (n == 0) n = 1;  // not reached: the text was made valid first
    }
    const std::string_view symbol = word.substr(i, n);
    std::optional<TokenId> id;
    if (n == 1 && byte_ids_[static_cast<unsigned char>(symbol[0])] >= 0 && options_.byte_level) {
      id = byte_ids_[static_cast<unsigned char>(symbol[0])];
    } else {
      id = find(symbol);
    }
    if (id) {
      ids.push_back(*id);
      lengths.push_back(static_cast<std::uint32_t>(n));
      last_unknown = false;
    } else if (options_.byte_fallback &&
               std::all_of(symbol.begin(), symbol.end(), [&](char c) { return byte_ids_[static_cast<unsigned char>(c)] >= 0; })) {
      for (char c : symbol) {
        ids.push_back(byte_ids_[static_cast<unsigned char>(c)]);
        lengths.push_back(0);
      }
      last_unknown = false;
    } else if (options_.unk) {
      if (!(options_.fuse_unk && last_unknown)) {
        ids.push_back(*options_.unk);
        lengths.push_back(0);
      }
      last_unknown = true;
    }
    // With no unknown token, `tokenizers` drops the character too.
    i += n;
  }
}

void BpeModel::merge(std::string_view word, std::vector<TokenId>& out) const {
  struct Candidate {
    std::uint32_t rank;
    std::uint32_t left;  // symbol index
    TokenId merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  thread_local std::vector<TokenId> ids;
  thread_local std::vector<std::uint32_t> lengths;
  thread_local std::vector<std::int32_t> next, prev;
  thread_local std::vector<Candidate> heap;
  ids.clear();
  lengths.clear();
  heap.clear();
  split_symbols(word, ids, lengths);
  const std::size_t n = ids.size();
  next.resize(n);
  prev.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1;
    prev[i] = static_cast<std::int32_t>(i) - 1;
  }
  const auto greater = std::greater<Candidate>{};
  const auto consider = [&](std::int32_t left) {
    if (left < 0 || next[left] < 0) return;
    if (const BpeMerge* m = merges_.find(ids[left], ids[next[left]])) {
      heap.push_back({m->rank, static_cast<std::uint32_t>(left), m->merged});
      std::push_heap(heap.begin(), heap.end(), greater);
    }
  };
  for (std::size_t i = 0; i + 1 < n; ++i) consider(static_cast<std::int32_t>(i));
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    const Candidate c = heap.back();
    heap.pop_back();
    const std::int32_t left = static_cast<std::int32_t>(c.left);
    const std::int32_t right = next[left];
    if (ids[left] < 0 || right < 0) continue;  // the left symbol was merged away, or has no right neighbour
    const BpeMerge* m = merges_.find(ids[left], ids[right]);
    if (m == nullptr || m->merged != c.merged) continue;  // a stale pair
    ids[left] = c.merged;
    ids[right] = -1;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    consider(prev[left]);
    consider(left);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (ids[i] >= 0) out.push_back(ids[i]);
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (!cut_before_space_ || word.size() <= kCacheMaxWordBytes) return encode_piece(word, out);
  std::size_t start = 0;
  for (std::size_t at = word.find(kSpace, 1); at != std::string_view::npos; at = word.find(kSpace, at + kSpace.size())) {
    if (word.substr(0, at).ends_with(kSpace)) continue;  // inside a run of spaces
    encode_piece(word.substr(start, at - start), out);
    start = at;
  }
  encode_piece(word.substr(start), out);
}

void BpeModel::encode_piece(std::string_view word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (const auto id = find(word)) {
      out.push_back(*id);
      return;
    }
  }
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (const auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const std::size_t start = out.size();
  merge(word, out);
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= kCacheMaxEntries) cache_.clear();  // bounded: a hostile text of unique words cannot grow it
    cache_.emplace(std::string(word), std::vector<TokenId>(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()));
  }
}

}  // namespace nuvec::text
