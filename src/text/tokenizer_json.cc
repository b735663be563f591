// A Hugging Face tokenizer.json (and tokenizer_config.json beside it) read
// into a TokenizerImpl. What nuvec does not implement is refused by name
// rather than run wrong.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nuvec/error.h"
#include "text/byte_level.h"
#include "text/tokenizer_impl.h"

namespace nuvec::text {
namespace {

using json = nlohmann::json;

struct Reader {
  std::filesystem::path name;

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(fmt::format("{}: {}", name.string(), what), name, 0);
  }
  [[noreturn]] void unsupported(std::string_view part, const std::string& type) const {
    fail(fmt::format("its {} is of type '{}', which nuvec does not support (nuvec reads byte-level BPE and "
                     "SentencePiece-style BPE tokenizers: see docs/text.md)",
                     part, type));
  }
  std::string type_of(const json& j, std::string_view part) const {
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) fail(fmt::format("its {} has no type", part));
    return j["type"].get<std::string>();
  }
  std::string string_pattern(const json& step, std::string_view part) const {
    const json& p = step.value("pattern", json{});
    if (p.contains("String")) return p["String"].get<std::string>();
    fail(fmt::format("its {} has a {} pattern; nuvec supports only {{\"String\": ...}} patterns there", part,
                     p.contains("Regex") ? "Regex" : "missing"));
  }
};

void read_normalizer(const Reader& r, const json& j, TokenizerImpl& t) {
  if (j.is_null()) return;
  const std::string type = r.type_of(j, "normalizer");
  using K = NormalizerStep::Kind;
  if (type == "Sequence") {
    for (const json& step : j.at("normalizers")) read_normalizer(r, step, t);
  } else if (type == "Prepend") {
    t.normalizer.push_back({K::prepend, "", j.at("prepend").get<std::string>()});
  } else if (type == "Replace") {
    t.normalizer.push_back({K::replace, r.string_pattern(j, "Replace normalizer"), j.at("content").get<std::string>()});
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    const K kind = type == "NFC" ? K::nfc : type == "NFD" ? K::nfd : type == "NFKC" ? K::nfkc : K::nfkd;
    t.normalizer.push_back({kind});
  } else if (type == "Lowercase") {
    t.normalizer.push_back({K::lowercase});
  } else if (type == "Strip") {
    NormalizerStep s{K::strip};
    s.left = j.value("strip_left", true);
    s.right = j.value("strip_right", true);
    t.normalizer.push_back(s);
  } else {
    r.unsupported("normalizer", type);
  }
}

PreTokenizerStep::Behavior behavior_of(const Reader& r, const std::string& b) {
  using B = PreTokenizerStep::Behavior;
  if (b == "Isolated") return B::isolated;
  if (b == "Removed") return B::removed;
  if (b == "MergedWithPrevious") return B::merged_with_previous;
  if (b == "MergedWithNext") return B::merged_with_next;
  if (b == "Contiguous") return B::contiguous;
  r.fail(fmt::format("its Split pre-tokenizer has the behavior '{}', which nuvec does not know", b));
}

std::string escape_literal(const std::string& s) {
  std::string out = "\\Q";
  out += s;
  out += "\\E";
  return out;
}

void read_pre_tokenizer(const Reader& r, const json& j, TokenizerImpl& t) {
  if (j.is_null()) return;
  const std::string type = r.type_of(j, "pre_tokenizer");
  using K = PreTokenizerStep::Kind;
  if (type == "Sequence") {
    for (const json& step : j.at("pretokenizers")) read_pre_tokenizer(r, step, t);
  } else if (type == "Split") {
    if (j.value("invert", false)) r.fail("its Split pre-tokenizer is inverted, which nuvec does not support");
    const json& p = j.at("pattern");
    const std::string pattern =
        p.contains("Regex") ? p["Regex"].get<std::string>() : escape_literal(p.at("String").get<std::string>());
    PreTokenizerStep s{K::split};
    s.regex = std::make_shared<const Regex>(pattern);
    s.behavior = behavior_of(r, j.value("behavior", "Isolated"));
    t.pre_tokenizer.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    PreTokenizerStep s{K::byte_level};
    s.add_prefix_space = j.value("add_prefix_space", false);
    if (j.value("use_regex", true)) s.regex = gpt2_pre_tokenizer_regex();
    t.pre_tokenizer.push_back(std::move(s));
  } else if (type == "Metaspace") {
    PreTokenizerStep s{K::metaspace};
    s.replacement = j.value("replacement", std::string("\xE2\x96\x81"));
    const std::string scheme = j.contains("prepend_scheme") ? j["prepend_scheme"].get<std::string>()
                               : j.value("add_prefix_space", true) ? "always"
                                                                   : "never";
    using P = PreTokenizerStep::Prepend;
    s.prepend = scheme == "first" ? P::first : scheme == "never" ? P::never : P::always;
    s.split = j.value("split", true);
    t.pre_tokenizer.push_back(std::move(s));
  } else {
    r.unsupported("pre_tokenizer", type);
  }
}

TokenId special_id(const Reader& r, const json& special_tokens, const std::string& name) {
  if (!special_tokens.contains(name)) r.fail(fmt::format("its post-processor names '{}' but does not define it", name));
  const json& ids = special_tokens[name].at("ids");
  if (ids.size() != 1) r.fail(fmt::format("its post-processor's '{}' is {} ids; nuvec supports one", name, ids.size()));
  return ids[0].get<TokenId>();
}

void read_post_processor(const Reader& r, const json& j, TokenizerImpl& t) {
  if (j.is_null()) return;
  const std::string type = r.type_of(j, "post_processor");
  if (type == "Sequence") {
    for (const json& step : j.at("processors")) read_post_processor(r, step, t);
  } else if (type == "ByteLevel") {
    // Only offsets change; the ids are as they were.
  } else if (type == "TemplateProcessing") {
    bool after = false;
    for (const json& item : j.at("single")) {
      if (item.contains("Sequence")) {
        after = true;
      } else if (item.contains("SpecialToken")) {
        const TokenId id = special_id(r, j.at("special_tokens"), item["SpecialToken"].at("id").get<std::string>());
        (after ? t.suffix : t.prefix).push_back(id);
      }
    }
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    t.prefix.push_back(j.at("cls").at(1).get<TokenId>());
    t.suffix.push_back(j.at("sep").at(1).get<TokenId>());
  } else {
    r.unsupported("post_processor", type);
  }
}

void read_decoder(const Reader& r, const json& j, TokenizerImpl& t) {
  if (j.is_null()) return;
  const std::string type = r.type_of(j, "decoder");
  using K = DecoderStep::Kind;
  if (type == "Sequence") {
    for (const json& step : j.at("decoders")) read_decoder(r, step, t);
  } else if (type == "ByteLevel") {
    t.decoder.push_back({K::byte_level});
  } else if (type == "Replace") {
    t.decoder.push_back({K::replace, r.string_pattern(j, "Replace decoder"), j.at("content").get<std::string>()});
  } else if (type == "ByteFallback") {
    t.decoder.push_back({K::byte_fallback});
  } else if (type == "Fuse") {
    t.decoder.push_back({K::fuse});
  } else if (type == "Strip") {
    DecoderStep s{K::strip};
    s.content = j.at("content").get<std::string>();
    s.start = j.value("start", std::size_t{0});
    s.stop = j.value("stop", std::size_t{0});
    t.decoder.push_back(s);
  } else if (type == "Metaspace") {
    DecoderStep s{K::metaspace};
    s.from = j.value("replacement", std::string("\xE2\x96\x81"));
    const std::string scheme = j.contains("prepend_scheme") ? j["prepend_scheme"].get<std::string>()
                               : j.value("add_prefix_space", true) ? "always"
                                                                   : "never";
    s.prepend_space = scheme != "never";
    t.decoder.push_back(s);
  } else {
    r.unsupported("decoder", type);
  }
}

void read_model(const Reader& r, const json& m, bool byte_level, TokenizerImpl& t) {
  const std::string type = r.type_of(m, "model");
  if (type != "BPE") r.unsupported("model", type);
  if (!m.value("dropout", json{}).is_null()) r.fail("its BPE model has dropout, which nuvec does not support");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json& v = m.value(key, json{});
    if (!v.is_null() && !v.get<std::string>().empty()) {
      r.fail(fmt::format("its BPE model has a {}, which nuvec does not support", key));
    }
  }
  const json& vocab = m.at("vocab");
  if (!vocab.is_object()) r.fail("its model's vocab is not an object of token -> id");
  std::size_t size = 0;
  for (const auto& [text, id] : vocab.items()) {
    const auto v = id.get<std::int64_t>();
    if (v < 0 || v >= (std::int64_t{1} << 24)) r.fail(fmt::format("its vocab gives '{}' the id {}", text, v));
    size = std::max<std::size_t>(size, static_cast<std::size_t>(v) + 1);
  }
  for (const AddedToken& a : t.added) size = std::max<std::size_t>(size, static_cast<std::size_t>(a.id) + 1);
  t.tokens.assign(size, "");
  t.special.assign(size, false);
  std::vector<std::string> keys(size);
  for (const auto& [text, id] : vocab.items()) {
    const auto v = id.get<std::size_t>();
    t.tokens[v] = text;
    if (byte_level) {
      keys[v] = byte_level_bytes(text).value_or("");  // a spelling outside the alphabet is never matched by BPE
    } else {
      keys[v] = text;
    }
  }
  for (const AddedToken& a : t.added) {
    t.tokens[a.id] = a.content;
    t.special[a.id] = a.special;
  }
  BpeOptions options;
  options.byte_level = byte_level;
  options.byte_fallback = m.value("byte_fallback", false);
  options.fuse_unk = m.value("fuse_unk", false);
  options.ignore_merges = m.value("ignore_merges", false);
  const json& unk = m.value("unk_token", json{});
  if (unk.is_string()) {
    if (!vocab.contains(unk.get<std::string>())) r.fail("its unk_token is not in the vocab");
    options.unk = vocab[unk.get<std::string>()].get<TokenId>();
  }
  std::vector<BpeMerge> merges;
  const json& list = m.value("merges", json::array());
  merges.reserve(list.size());
  for (const json& item : list) {
    std::string left, right;
    if (item.is_string()) {  // "a b"
      const std::string s = item.get<std::string>();
      const std::size_t space = s.find(' ', 1);
      if (space == std::string::npos) r.fail(fmt::format("its merge '{}' is not two tokens", s));
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (item.is_array() && item.size() == 2) {  // ["a", "b"]
      left = item[0].get<std::string>();
      right = item[1].get<std::string>();
    } else {
      r.fail("its merges are neither \"a b\" strings nor [a, b] pairs");
    }
    const auto a = vocab.find(left), b = vocab.find(right), ab = vocab.find(left + right);
    if (a == vocab.end() || b == vocab.end() || ab == vocab.end()) continue;  // `tokenizers` skips these too
    merges.push_back({a->get<TokenId>(), b->get<TokenId>(), ab->get<TokenId>(), static_cast<std::uint32_t>(merges.size())});
  }
  t.model = std::make_unique<BpeModel>(std::move(keys), merges, options);
}

bool mentions_byte_level(const json& j) {
  if (j.is_object()) {
    if (j.value("type", "") == "ByteLevel") return true;
    for (const auto& [k, v] : j.items()) {
      if (mentions_byte_level(v)) return true;
    }
  } else if (j.is_array()) {
    for (const json& v : j) {
      if (mentions_byte_level(v)) return true;
    }
  }
  return false;
}

}  // namespace

std::optional<std::string> config_token(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

std::unique_ptr<TokenizerImpl> tokenizer_from_json(std::string_view text, std::string_view config_text,
                                                   const std::filesystem::path& name) {
  const Reader r{name};
  json j, config = json::object();
  try {
    j = json::parse(text);
    if (!config_text.empty()) config = json::parse(config_text);
  } catch (const json::exception& e) {
    r.fail(fmt::format("not valid JSON: {}", e.what()));
  }
  auto t = std::make_unique<TokenizerImpl>();
  t->source = "tokenizer.json";
  try {
    if (!j.is_object() || !j.contains("model")) r.fail("it has no \"model\": is it a tokenizer.json?");
    for (const json& a : j.value("added_tokens", json::array())) {
      AddedToken token;
      token.content = a.at("content").get<std::string>();
      token.id = a.at("id").get<TokenId>();
      if (token.id < 0 || token.id >= (1 << 24)) r.fail(fmt::format("its added token '{}' has the id {}", token.content, token.id));
      token.special = a.value("special", false);
      token.lstrip = a.value("lstrip", false);
      token.rstrip = a.value("rstrip", false);
      token.single_word = a.value("single_word", false);
      t->added.push_back(std::move(token));
    }
    const bool byte_level = mentions_byte_level(j.value("pre_tokenizer", json{})) ||
                            mentions_byte_level(j.value("decoder", json{}));
    read_model(r, j.at("model"), byte_level, *t);
    read_normalizer(r, j.value("normalizer", json{}), *t);
    read_pre_tokenizer(r, j.value("pre_tokenizer", json{}), *t);
    read_post_processor(r, j.value("post_processor", json{}), *t);
    read_decoder(r, j.value("decoder", json{}), *t);
    if (config.is_object()) {
      const json& chat = config.value("chat_template", json{});
      if (chat.is_string()) {
        t->chat_template = chat.get<std::string>();
      } else if (chat.is_array()) {
        for (const json& named : chat) {
          if (named.value("name", "") == "default") t->chat_template = named.value("template", "");
        }
      }
      if (const auto bos = config_token(config, "bos_token")) t->bos = t->model->find(*bos);
      if (const auto eos = config_token(config, "eos_token")) t->eos = t->model->find(*eos);
      for (const AddedToken& a : t->added) {
        if (const auto bos = config_token(config, "bos_token"); bos && a.content == *bos) t->bos = a.id;
        if (const auto eos = config_token(config, "eos_token"); eos && a.content == *eos) t->eos = a.id;
      }
    }
  } catch (const json::exception& e) {
    r.fail(fmt::format("unexpected structure: {}", e.what()));
  } catch (const InvalidArgument& e) {
    r.fail(e.what());
  }
  return t;
}

}  // namespace nuvec::text
