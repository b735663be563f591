// `nuvec tokenize MODEL_OR_TOKENIZER`: the ids of a text, or the text of
// ids, with the tokenizer a model ships (as llama.cpp's llama-tokenize).
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "lm_prompt.h"
#include "nuvec/error.h"
#include "nuvec/text/tokenizer.h"
#include "text_prompt.h"

namespace nuvec::tool {
namespace {

struct TokenizeArgs {
  std::string source;
  std::string text;
  std::string file;
  std::string ids;
  bool json = false;
  bool no_special = false;
  bool pieces = false;
};

int tokenize(const TokenizeArgs& a, bool have_text, bool have_ids) {
  const text::Tokenizer t = load_tokenizer(a.source, "");
  if (have_ids) {
    const std::vector<std::int32_t> ids = parse_token_ids(a.ids);
    for (std::int32_t id : ids) {
      if (static_cast<std::size_t>(id) >= t.vocab_size()) {
        throw InvalidArgument(fmt::format("--ids: {} is outside the vocabulary of {} tokens", id, t.vocab_size()));
      }
    }
    const std::string decoded = t.decode(ids, a.no_special);
    if (a.json) {
      fmt::print("{}\n", nlohmann::ordered_json{{"ids", ids}, {"text", decoded}}.dump(2, ' ', false,
                                                                                     nlohmann::json::error_handler_t::replace));
    } else {
      fmt::print("{}\n", decoded);
    }
    return 0;
  }
  const std::string input = have_text ? a.text : read_text_file(a.file.empty() ? "-" : a.file, "--file");
  const std::vector<text::TokenId> ids = t.encode(input, !a.no_special);
  if (a.json) {
    nlohmann::ordered_json tokens = nlohmann::json::array();
    for (text::TokenId id : ids) tokens.push_back(std::string(t.token_text(id)));
    fmt::print("{}\n", nlohmann::ordered_json{{"ids", ids}, {"tokens", tokens}, {"count", ids.size()}}.dump(
                           2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else if (a.pieces) {
    for (text::TokenId id : ids) fmt::print("{:>7} -> '{}'\n", id, t.token_text(id));
  } else {
    fmt::print("{}\n", fmt::join(ids, ","));
  }
  return 0;
}

}  // namespace

Command add_tokenize_command(CLI::App& parent) {
  auto a = std::make_shared<TokenizeArgs>();
  CLI::App* app = parent.add_subcommand("tokenize", "Turn text into token ids, or ids into text");
  app->footer(
      "MODEL_OR_TOKENIZER is a model directory (its tokenizer.json), a tokenizer.json, or\n"
      "a .gguf file (its tokenizer.ggml.* vocabulary). The text comes from --text, --file\n"
      "or standard input; the ids print comma-separated, as `nuvec run --prompt-ids` takes\n"
      "them. By default the ids include the special tokens the tokenizer's post-processor\n"
      "adds (Llama 2's <s>: what the model sees); --no-special leaves them out, as\n"
      "`tokenizers`' add_special_tokens=False does. With --ids, prints their text\n"
      "(--no-special leaves out special tokens there).");
  app->add_option("MODEL_OR_TOKENIZER", a->source, "model directory, tokenizer.json or .gguf")
      ->required()
      ->check(CLI::ExistingPath);
  auto* text = app->add_option("--text", a->text, "the text to tokenize");
  auto* file = app->add_option("--file", a->file, "read the text from this file ('-': standard input)");
  auto* ids = app->add_option("--ids", a->ids, "ids to turn into text, e.g. 1,15043,3186");
  text->excludes(file)->excludes(ids);
  file->excludes(ids);
  app->add_flag("--json", a->json, "print a JSON object: ids, token spellings (or ids and text)");
  app->add_flag("--pieces", a->pieces, "print one 'id -> piece' line per token");
  app->add_flag("--no-special", a->no_special, "without the post-processor's special tokens");
  return {app, [a, text, ids] { return tokenize(*a, text->count() > 0, ids->count() > 0); }};
}

}  // namespace nuvec::tool
