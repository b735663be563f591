// The vocabulary inside a GGUF file (llama.cpp's tokenizer.ggml.* keys) read
// into a TokenizerImpl. "llama" is SentencePiece BPE: no merges, but each
// token's score, the higher merged first; spaces are "▁", a space is put in
// front unless add_space_prefix is false, and missing characters fall back
// to the <0xXX> byte tokens. "gpt2" is byte-level BPE with merges and the
// pre-tokenizer regex that tokenizer.ggml.pre names.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/io/gguf.h"
#include "text/byte_level.h"
#include "text/tokenizer_impl.h"

namespace nuvec::text {
namespace {

// llama.cpp's token types.
enum TokenType : std::int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

constexpr const char* kSpace = "\xE2\x96\x81";  // ▁
constexpr std::size_t kMaxMergedPieceBytes = 1024;

struct Metadata {
  const io::GgufFile& file;
  std::filesystem::path name;

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(fmt::format("{}: {}", name.string(), what), name, 0);
  }
  std::optional<std::int64_t> integer(std::string_view key) const {
    const io::GgufValue* v = file.find(key);
    if (v == nullptr) return std::nullopt;
    return std::visit(
        [&](const auto& x) -> std::int64_t {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            return static_cast<std::int64_t>(x);
          } else {
            fail(fmt::format("{} is a {}, not an integer", key, io::gguf_value_type_name(io::gguf_value_type(*v))));
          }
        },
        *v);
  }
  std::optional<bool> boolean(std::string_view key) const {
    const io::GgufValue* v = file.find(key);
    if (v == nullptr) return std::nullopt;
    if (const bool* b = std::get_if<bool>(v)) return *b;
    fail(fmt::format("{} is not a bool", key));
  }
  std::optional<std::string> string(std::string_view key) const {
    const io::GgufValue* v = file.find(key);
    if (v == nullptr) return std::nullopt;
    if (const std::string* s = std::get_if<std::string>(v)) return *s;
    fail(fmt::format("{} is not a string", key));
  }
  template <class T>
  const std::vector<T>* array(std::string_view key) const {
    const io::GgufValue* v = file.find(key);
    if (v == nullptr) return nullptr;
    const io::GgufArray* a = std::get_if<io::GgufArray>(v);
    const std::vector<T>* elements = a ? std::get_if<std::vector<T>>(&a->elements) : nullptr;
    if (elements == nullptr) fail(fmt::format("{} is not an array of the expected type", key));
    return elements;
  }
};

// Llama 3's and Qwen2's patterns (tokenizer.json's Split regexes).
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

}  // namespace

std::unique_ptr<TokenizerImpl> tokenizer_from_gguf(const io::GgufFile& file, const std::filesystem::path& name) {
  const Metadata md{file, name};
  const std::string model = md.string("tokenizer.ggml.model").value_or("");
  if (model.empty()) md.fail("it has no tokenizer.ggml.model: the file carries no vocabulary");
  if (model != "llama" && model != "gpt2") {
    md.fail(fmt::format("its tokenizer.ggml.model is '{}'; nuvec reads 'llama' (SentencePiece) and 'gpt2' (byte-level "
                        "BPE) vocabularies",
                        model));
  }
  const auto* tokens = md.array<std::string>("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->empty()) md.fail("it has no tokenizer.ggml.tokens");
  if (tokens->size() >= (std::size_t{1} << 24)) md.fail(fmt::format("its vocabulary of {} tokens is too large", tokens->size()));
  const std::size_t n = tokens->size();
  const auto* types = md.array<std::int32_t>("tokenizer.ggml.token_type");
  if (types != nullptr && types->size() != n) {
    md.fail(fmt::format("tokenizer.ggml.token_type has {} entries for {} tokens", types->size(), n));
  }
  const auto type_of = [&](std::size_t id) { return types ? (*types)[id] : static_cast<std::int32_t>(kNormal); };

  auto t = std::make_unique<TokenizerImpl>();
  t->source = "gguf";
  t->tokens = *tokens;
  t->special.assign(n, false);
  const bool byte_level = model == "gpt2";
  for (std::size_t id = 0; id < n; ++id) {
    const std::int32_t type = type_of(id);
    // Matched in the text before BPE, as tokenizer.json's added tokens are:
    // control tokens and <unk> as special ones, user-defined ones as plain.
    if (type == kControl || type == kUserDefined || type == kUnknown) {
      t->added.push_back({(*tokens)[id], static_cast<TokenId>(id), type != kUserDefined});
      t->special[id] = type != kUserDefined;
    }
  }
  std::vector<std::string> keys(n);
  for (std::size_t id = 0; id < n; ++id) {
    const std::int32_t type = type_of(id);
    if (type == kControl || type == kUnused || type == kUnknown) continue;
    keys[id] = byte_level ? byte_level_bytes((*tokens)[id]).value_or("") : (*tokens)[id];
  }
  BpeOptions options;
  options.byte_level = byte_level;
  std::vector<BpeMerge> merges;
  std::map<std::string_view, TokenId> index;  // token -> id, for building merges
  for (std::size_t id = 0; id < n; ++id) index.emplace((*tokens)[id], static_cast<TokenId>(id));
  const auto id_of = [&](std::string_view s) -> std::optional<TokenId> {
    const auto it = index.find(s);
    if (it == index.end()) return std::nullopt;
    return it->second;
  };

  if (model == "llama") {
    options.byte_fallback = true;
    if (const auto unk = md.integer("tokenizer.ggml.unknown_token_id"); unk && *unk >= 0 && *unk < static_cast<std::int64_t>(n)) {
      options.unk = static_cast<TokenId>(*unk);
    }
    const auto* scores = md.array<float>("tokenizer.ggml.scores");
    if (scores == nullptr || scores->size() != n) md.fail("a 'llama' vocabulary needs tokenizer.ggml.scores, one per token");
    // Every split of a normal token into two tokens is a merge, ranked by
    // the merged token's score (equal scores share a rank, leftmost first).
    std::vector<float> distinct(scores->begin(), scores->end());
    std::sort(distinct.begin(), distinct.end(), std::greater<>());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (std::size_t id = 0; id < n; ++id) {
      if (type_of(id) != kNormal && type_of(id) != kUserDefined) continue;
      const std::string_view s = (*tokens)[id];
      // Real pieces are short; a hostile file's megabyte-long ones would
      // cost a lookup per byte, each comparing up to the whole piece.
      if (s.size() > kMaxMergedPieceBytes) continue;
      const auto rank = static_cast<std::uint32_t>(
          std::lower_bound(distinct.begin(), distinct.end(), (*scores)[id], std::greater<>()) - distinct.begin());
      for (std::size_t cut = 1; cut < s.size(); ++cut) {
        if ((static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) continue;  // not inside a character
        const auto a = id_of(s.substr(0, cut)), b = id_of(s.substr(cut));
        if (a && b) merges.push_back({*a, *b, static_cast<TokenId>(id), rank});
      }
    }
    std::stable_sort(merges.begin(), merges.end(), [](const BpeMerge& x, const BpeMerge& y) { return x.rank < y.rank; });
    if (md.boolean("tokenizer.ggml.add_space_prefix").value_or(true)) {
      t->normalizer.push_back({NormalizerStep::Kind::prepend, "", kSpace});
    }
    t->normalizer.push_back({NormalizerStep::Kind::replace, " ", kSpace});
    t->decoder.push_back({DecoderStep::Kind::replace, kSpace, " "});
    t->decoder.push_back({DecoderStep::Kind::byte_fallback});
    t->decoder.push_back({DecoderStep::Kind::fuse});
    if (md.boolean("tokenizer.ggml.add_space_prefix").value_or(true)) {
      DecoderStep strip{DecoderStep::Kind::strip};
      strip.content = " ";
      strip.start = 1;
      t->decoder.push_back(strip);
    }
  } else {
    const auto* merge_list = md.array<std::string>("tokenizer.ggml.merges");
    if (merge_list == nullptr) md.fail("a 'gpt2' vocabulary needs tokenizer.ggml.merges");
    for (const std::string& m : *merge_list) {
      const std::size_t space = m.find(' ', 1);
      if (space == std::string::npos) md.fail(fmt::format("its merge '{}' is not two tokens", m));
      const auto a = id_of(std::string_view(m).substr(0, space)), b = id_of(std::string_view(m).substr(space + 1));
      const auto ab = id_of(m.substr(0, space) + m.substr(space + 1));
      if (a && b && ab) merges.push_back({*a, *b, *ab, static_cast<std::uint32_t>(merges.size())});
    }
    const std::string pre = md.string("tokenizer.ggml.pre").value_or("default");
    PreTokenizerStep split{PreTokenizerStep::Kind::split};
    if (pre == "llama3" || pre == "llama-bpe") {
      split.regex = std::make_shared<const Regex>(kLlama3Pattern);
      options.ignore_merges = true;
    } else if (pre == "qwen2") {
      split.regex = std::make_shared<const Regex>(kQwen2Pattern);
      t->normalizer.push_back({NormalizerStep::Kind::nfc});
    } else if (pre == "gpt2" || pre == "gpt-2" || pre == "default") {
      split.regex = gpt2_pre_tokenizer_regex();
    } else {
      md.fail(fmt::format("its tokenizer.ggml.pre is '{}'; nuvec knows default, gpt-2, llama-bpe and qwen2", pre));
    }
    t->pre_tokenizer.push_back(std::move(split));
    t->decoder.push_back({DecoderStep::Kind::byte_level});
  }
  t->model = std::make_unique<BpeModel>(std::move(keys), merges, options);

  const auto id_key = [&](const char* key) -> std::optional<TokenId> {
    const auto v = md.integer(key);
    if (!v || *v < 0 || *v >= static_cast<std::int64_t>(n)) return std::nullopt;
    return static_cast<TokenId>(*v);
  };
  t->bos = id_key("tokenizer.ggml.bos_token_id");
  t->eos = id_key("tokenizer.ggml.eos_token_id");
  if (md.boolean("tokenizer.ggml.add_bos_token").value_or(model == "llama") && t->bos) t->prefix.push_back(*t->bos);
  if (md.boolean("tokenizer.ggml.add_eos_token").value_or(false) && t->eos) t->suffix.push_back(*t->eos);
  t->chat_template = md.string("tokenizer.chat_template").value_or("");
  return t;
}

}  // namespace nuvec::text
