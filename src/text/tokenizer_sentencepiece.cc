// A tokenizer from a SentencePiece `tokenizer.model` (and the
// tokenizer_config.json beside it, where there is one), as transformers'
// sentencepiece-based tokenizers (LlamaTokenizer, legacy mode) use it: the
// special tokens are matched in the text first and never split (without a
// config: the model's control and unknown pieces, <s> </s> <unk>), each
// stretch between them is encoded by libsentencepiece, and BOS goes in front
// (add_bos_token, default true where the model has one; add_eos_token,
// default false).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nuvec/error.h"
#include "text/sentencepiece_model.h"
#include "text/tokenizer_impl.h"

namespace nuvec::text {

using json = nlohmann::json;

std::unique_ptr<TokenizerImpl> tokenizer_from_sentencepiece(std::string_view model_bytes, std::string_view config_text,
                                                            const std::filesystem::path& name) {
  auto model = std::make_shared<const SentencePieceModel>(model_bytes, name);
  auto t = std::make_unique<TokenizerImpl>();
  t->source = "tokenizer.model";
  t->sentencepiece = model;
  const std::size_t n = model->size();
  t->tokens.reserve(n);
  for (std::size_t i = 0; i < n; ++i) t->tokens.push_back(model->piece(static_cast<TokenId>(i)));
  t->special.assign(n, false);
  if (model->bos_id() >= 0) t->bos = model->bos_id();
  if (model->eos_id() >= 0) t->eos = model->eos_id();

  json config = json::object();
  const std::string config_name = (name.parent_path() / "tokenizer_config.json").string();
  try {
    if (!config_text.empty()) config = json::parse(config_text);
    if (!config.is_object()) throw FormatError(fmt::format("{}: not a JSON object", config_name), config_name, 0);
    if (config.contains("added_tokens_decoder") && config["added_tokens_decoder"].is_object()) {
      for (const auto& [key, a] : config["added_tokens_decoder"].items()) {
        AddedToken token;
        std::size_t used = 0;
        const long id = std::stol(key, &used);
        if (used != key.size() || id < 0 || static_cast<std::size_t>(id) >= n) {
          throw FormatError(fmt::format("{}: added token id '{}' is not an id of the {} pieces of {}", config_name, key,
                                        n, name.string()),
                            config_name, 0);
        }
        token.id = static_cast<TokenId>(id);
        token.content = a.at("content").get<std::string>();
        token.special = a.value("special", false);
        token.lstrip = a.value("lstrip", false);
        token.rstrip = a.value("rstrip", false);
        token.single_word = a.value("single_word", false);
        t->added.push_back(std::move(token));
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        const auto id = static_cast<TokenId>(i);
        if (model->is_control(id) || model->is_unknown(id)) t->added.push_back({t->tokens[i], id, true});
      }
    }
    if (const json& chat = config.value("chat_template", json{}); chat.is_string()) {
      t->chat_template = chat.get<std::string>();
    } else if (chat.is_array()) {
      for (const json& named : chat) {
        if (named.value("name", "") == "default") t->chat_template = named.value("template", "");
      }
    }
    for (const auto& [key, slot] : {std::pair{"bos_token", &t->bos}, std::pair{"eos_token", &t->eos}}) {
      if (const auto text = config_token(config, key)) {
        for (std::size_t i = 0; i < n; ++i) {
          if (t->tokens[i] == *text) *slot = static_cast<TokenId>(i);
        }
      }
    }
    const bool add_bos = config.value("add_bos_token", true), add_eos = config.value("add_eos_token", false);
    if (add_bos && t->bos) t->prefix.push_back(*t->bos);
    if (add_eos && t->eos) t->suffix.push_back(*t->eos);
  } catch (const json::exception& e) {
    throw FormatError(fmt::format("{}: unexpected structure: {}", config_name, e.what()), config_name, 0);
  } catch (const std::logic_error& e) {  // std::stol
    throw FormatError(fmt::format("{}: an added token id is not a number ({})", config_name, e.what()), config_name, 0);
  }
  for (const AddedToken& a : t->added) {
    if (a.special) t->special[a.id] = true;
  }
  return t;
}

}  // namespace nuvec::text
