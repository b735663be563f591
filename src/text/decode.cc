// Decoding: the tokens' spellings through tokenizer.json's decoder steps
// (ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace), joined.
#include <fmt/format.h>

#include "nuvec/error.h"
#include "text/byte_level.h"
#include "text/sentencepiece_model.h"
#include "text/string_ops.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace nuvec::text {
namespace {

// "<0x0A>" -> 0x0A, as `tokenizers`' ByteFallback reads it.
int fallback_byte(std::string_view t) {
  if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return -1;
  int v = 0;
  for (char c : t.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else return -1;
  }
  return v;
}

void byte_fallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string bytes;
  std::size_t count = 0;
  const auto flush = [&] {
    if (count == 0) return;
    if (utf8_valid(bytes)) {
      out.push_back(bytes);
    } else {
      for (std::size_t i = 0; i < count; ++i) out.emplace_back(kReplacementCharacter);  // one per byte, as `tokenizers`
    }
    bytes.clear();
    count = 0;
  };
  for (std::string& t : tokens) {
    if (const int b = fallback_byte(t); b >= 0) {
      bytes.push_back(static_cast<char>(b));
      ++count;
    } else {
      flush();
      out.push_back(std::move(t));
    }
  }
  flush();
  tokens = std::move(out);
}

void strip(std::string& t, std::string_view c, std::size_t start, std::size_t stop) {
  for (std::size_t i = 0; i < start && t.starts_with(c); ++i) t.erase(0, c.size());
  for (std::size_t i = 0; i < stop && t.ends_with(c); ++i) t.erase(t.size() - c.size());
}

}  // namespace

// A tokenizer.model's ids: each run of ordinary pieces decoded by
// libsentencepiece (which drops the run's leading dummy-prefix space), added
// tokens as their text between runs. Skipped special tokens do not cut a run,
// as in transformers' sentencepiece tokenizers.
std::string TokenizerImpl::decode_sentencepiece(std::span<const TokenId> ids, bool skip_special) const {
  std::string out;
  std::vector<TokenId> run;
  for (const TokenId id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= tokens.size()) {
      throw InvalidArgument(fmt::format("token id {} is outside the vocabulary [0, {})", id, tokens.size()));
    }
    const AddedToken* added_token = nullptr;
    for (const AddedToken& a : added) {
      if (a.id == id) added_token = &a;
    }
    if (added_token == nullptr) {
      run.push_back(id);
    } else if (!(skip_special && added_token->special)) {
      out += sentencepiece->decode(run);
      run.clear();
      out += added_token->content;
    }
  }
  return out + sentencepiece->decode(run);
}

std::string TokenizerImpl::decode(std::span<const TokenId> ids, bool skip_special) const {
  if (sentencepiece) return decode_sentencepiece(ids, skip_special);
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  for (TokenId id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= tokens.size()) {
      throw InvalidArgument(fmt::format("token id {} is outside the vocabulary [0, {})", id, tokens.size()));
    }
    if (skip_special && special[id]) continue;
    pieces.push_back(tokens[id]);
  }
  if (decoder.empty()) {  // `tokenizers` joins the tokens with spaces when there is no decoder
    std::string out;
    for (std::size_t i = 0; i < pieces.size(); ++i) out += (i ? " " : "") + pieces[i];
    return out;
  }
  for (const DecoderStep& step : decoder) {
    switch (step.kind) {
      case DecoderStep::Kind::byte_level: {
        std::string bytes;
        for (const std::string& t : pieces) {
          const std::optional<std::string> raw = byte_level_bytes(t);
          bytes += raw ? *raw : t;
        }
        pieces.assign(1, utf8_lossy(bytes));
        break;
      }
      case DecoderStep::Kind::replace:
        for (std::string& t : pieces) replace_all(t, step.from, step.to);
        break;
      case DecoderStep::Kind::byte_fallback: byte_fallback(pieces); break;
      case DecoderStep::Kind::fuse: {
        std::string all;
        for (const std::string& t : pieces) all += t;
        pieces.assign(1, std::move(all));
        break;
      }
      case DecoderStep::Kind::strip:
        for (std::string& t : pieces) strip(t, step.content, step.start, step.stop);
        break;
      case DecoderStep::Kind::metaspace:
        for (std::size_t i = 0; i < pieces.size(); ++i) {
          replace_all(pieces[i], step.from, " ");
          if (i == 0 && step.prepend_space && pieces[i].starts_with(' ')) pieces[i].erase(0, 1);
        }
        break;
    }
  }
  std::string out;
  for (const std::string& t : pieces) out += t;
  return out;
}

}  // namespace nuvec::text
