// `nuvec chat MODEL`: a conversation with a model over its chat template
// (tokenizer_config.json's chat_template, GGUF's tokenizer.chat_template),
// rendered by nuvec's Jinja subset (include/nuvec/text/chat_template.h).
// `--render MESSAGES.json` prints the rendered prompt and exits, as
// transformers' apply_chat_template(..., tokenize=False) does.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "builtin_model.h"
#include "command.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/sampler.h"
#include "nuvec/lm/session.h"
#include "nuvec/text/chat_template.h"
#include "nuvec/text/stream_decoder.h"
#include "nuvec/text/tokenizer.h"
#include "model_flags.h"
#include "progress_line.h"
#include "text_prompt.h"

namespace nuvec::tool {
namespace {

// For a tokenizer that carries no chat template (the built-in model's): a
// plain one of nuvec's own, "role: content" lines.
constexpr const char* kPlainTemplate =
    "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}";

struct ChatArgs {
  std::string model;
  std::string render;
  bool add_generation_prompt = false;
  std::string template_file;
  std::string tokenizer;
  std::string system;
  std::size_t max_new = 256;
  lm::SamplingOptions sampling;
  ModelFlags flags;
};

std::string chat_template(const ChatArgs& a, const text::Tokenizer& t) {
  if (!a.template_file.empty()) return read_text_file(a.template_file, "--template");
  if (!t.chat_template().empty()) return t.chat_template();
  fmt::print(stderr, "nuvec: the tokenizer has no chat template; using plain 'role: content' lines (--template FILE to give one)\n");
  return kPlainTemplate;
}

text::ChatRenderOptions render_options(const text::Tokenizer& t, bool add_generation_prompt) {
  text::ChatRenderOptions o;
  o.add_generation_prompt = add_generation_prompt;
  if (t.bos()) o.bos_token = std::string(t.token_text(*t.bos()));
  if (t.eos()) o.eos_token = std::string(t.token_text(*t.eos()));
  return o;
}

// What --render needs from the tokenizer: the template and the spellings of
// BOS and EOS. A model directory's tokenizer_config.json has all three (and
// transformers takes them from there), so the vocabulary is not read: a
// tokenizer.json is megabytes, and parsing it costs more than the render.
struct RenderInputs {
  std::string chat_template;
  text::ChatRenderOptions options;
};

std::optional<RenderInputs> render_inputs_from_config(const ChatArgs& a, const std::filesystem::path& dir) {
  const auto path = dir / "tokenizer_config.json";
  if (!std::filesystem::is_directory(dir) || !std::filesystem::exists(path)) return std::nullopt;
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(read_text_file(path.string(), "MODEL"));
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // the full load reports it
  }
  const auto token = [&](const char* key) -> std::optional<std::string> {
    const nlohmann::json& v = config.value(key, nlohmann::json{});
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return std::nullopt;
  };
  if (!config.is_object()) return std::nullopt;
  RenderInputs r;
  // A token the config leaves out or sets to null is not there (Qwen's BOS),
  // as transformers' special_tokens_map leaves it out.
  if (const auto bos = token("bos_token")) r.options.bos_token = *bos;
  if (const auto eos = token("eos_token")) r.options.eos_token = *eos;
  r.options.add_generation_prompt = a.add_generation_prompt;
  if (!a.template_file.empty()) {
    r.chat_template = read_text_file(a.template_file, "--template");
  } else if (const nlohmann::json& chat = config.value("chat_template", nlohmann::json{}); chat.is_string()) {
    r.chat_template = chat.get<std::string>();
  } else {
    return std::nullopt;  // a named list of templates, or none: as the full load reads it
  }
  return r;
}

// One assistant turn: the rendered conversation prefilled, the reply
// streamed to stdout until an end-of-turn token or max_new tokens.
std::string reply(Device& device, const lm::Model& model, const text::Tokenizer& t, const std::string& prompt,
                  const ChatArgs& a) {
  const std::vector<text::TokenId> ids = t.encode(prompt, false);  // the template spells the special tokens
  if (ids.empty()) throw InvalidArgument("the chat template rendered an empty prompt");
  lm::SessionOptions options;
  options.context = ids.size() + a.max_new;
  options.kv_cache = kv_cache_precision(a.flags);
  ProgressLine prefill_progress("prefill");
  options.progress = std::ref(prefill_progress);
  lm::Session session(device, model, options);
  lm::Sampler sampler(device, model.config().vocab_size, a.sampling);
  text::StreamDecoder stream(t);
  std::vector<text::TokenId> generated;
  const auto& stops = t.stop_ids();
  std::span<const float> logits = session.prefill(ids);
  prefill_progress.finish();
  while (generated.size() < a.max_new) {
    const text::TokenId id = sampler.sample(logits);
    if (std::find(stops.begin(), stops.end(), id) != stops.end()) break;
    generated.push_back(id);
    const std::string piece = stream.push(id);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    if (generated.size() < a.max_new) logits = session.decode(id);
  }
  const std::string rest = stream.finish();
  fmt::print("{}\n", rest);
  std::fflush(stdout);
  return t.decode(generated, true);
}

int chat(const ChatArgs& a) {
  const bool builtin = a.model.empty();
  const std::string model_path = builtin ? ensure_builtin_model().string() : a.model;
  if (!a.render.empty()) {
    if (const auto r = render_inputs_from_config(a, a.tokenizer.empty() ? model_path : a.tokenizer)) {
      const std::string messages = read_text_file(a.render, "--render");
      fmt::print("{}", text::render_chat_template(r->chat_template, messages, r->options));
      return 0;
    }
  }
  const text::Tokenizer t = load_tokenizer(model_path, a.tokenizer);
  const std::string tmpl = chat_template(a, t);
  if (!a.render.empty()) {
    const std::string messages = read_text_file(a.render, "--render");
    fmt::print("{}", text::render_chat_template(tmpl, messages, render_options(t, a.add_generation_prompt)));
    return 0;
  }
  Device& device = Device::cpu();
  apply_before_load(a.flags, device);
  const lm::Model model = lm::load_model(device, model_path);
  apply_after_load(a.flags, device);
  nlohmann::json messages = nlohmann::json::array();
  if (!a.system.empty()) messages.push_back({{"role", "system"}, {"content", a.system}});
  const bool interactive = isatty(fileno(stdin));
  if (interactive) fmt::print(stderr, "nuvec chat: type a message, an empty line or Ctrl-D to end\n");
  for (std::string line;;) {
    if (interactive) fmt::print(stderr, "> ");
    if (!std::getline(std::cin, line) || (interactive && line.empty())) break;
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    const std::string prompt = text::render_chat_template(tmpl, messages.dump(), render_options(t, true));
    const std::string answer = reply(device, model, t, prompt, a);
    messages.push_back({{"role", "assistant"}, {"content", answer}});
  }
  return 0;
}

}  // namespace

Command add_chat_command(CLI::App& parent) {
  auto a = std::make_shared<ChatArgs>();
  CLI::App* app = parent.add_subcommand("chat", "Talk with a model over its chat template");
  app->footer(
      "Reads one message per line from standard input, renders the conversation with\n"
      "the model's chat template (tokenizer_config.json's chat_template; --template FILE\n"
      "to give another), and streams each reply until the model's end-of-turn token.\n"
      "Without MODEL, the built-in model (random weights: its replies are gibberish).\n"
      "--render MESSAGES.json prints the rendered prompt for a JSON list of\n"
      "{\"role\", \"content\"} messages and exits (MODEL may then be just a tokenizer), as\n"
      "transformers' apply_chat_template(messages, tokenize=False) does. A template that\n"
      "uses Jinja beyond nuvec's subset is an error naming the construct (docs/text.md).");
  app->add_option("MODEL", a->model, "model directory (default: the built-in model)")->check(CLI::ExistingPath);
  app->add_option("--render", a->render, "print the prompt rendered for these messages ('-': stdin) and exit");
  app->add_flag("--add-generation-prompt", a->add_generation_prompt, "with --render: end with the assistant's header");
  app->add_option("--template", a->template_file, "a chat template file instead of the tokenizer's");
  app->add_option("--tokenizer", a->tokenizer, "tokenizer.json, directory or .gguf (default: the model's own)");
  app->add_option("--system", a->system, "a system message to start the conversation with");
  app->add_option("--max-new", a->max_new, "most tokens per reply")->default_val(a->max_new);
  app->add_option("--temperature", a->sampling.temperature, "0: greedy")->default_val(0);
  app->add_option("--top-p", a->sampling.top_p, "nucleus sampling threshold")->default_val(1);
  app->add_option("--seed", a->sampling.seed, "sampling seed")->default_val(0);
  add_model_flags(*app, a->flags);
  return {app, [a] { return chat(*a); }};
}

}  // namespace nuvec::tool
