// `nuvec run MODEL`: loads a model, runs a prompt through it and generates
// tokens (greedy, or sampled with --temperature/--top-p/--seed), streaming
// the generated text (or printing the ids, for a prompt given as ids) and
// the speed of each phase, on the CPU or (--device cuda) a GPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "builtin_model.h"
#include "cli_numbers.h"
#include "command.h"
#include "context_budget.h"
#include "device_option.h"
#include "generation.h"
#include "gpu_generation.h"
#include "nuvec/lm/kernels.h"
#include "lm_prompt.h"
#include "logits_file.h"
#include "nuvec/error.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/sampler.h"
#include "nuvec/lm/session.h"
#include "nuvec/text/stream_decoder.h"
#include "nuvec/text/tokenizer.h"
#include "model_flags.h"
#include "progress_line.h"
#include "text_prompt.h"

namespace nuvec::tool {
namespace {

struct RunArgs {
  std::string model;
  std::string prompt_ids;
  std::size_t prompt_len = 0;
  std::size_t max_new = 32;
  std::string device = "cpu";
  lm::SamplingOptions sampling;
  ModelFlags flags;
  std::size_t context = 0;
  std::size_t prefill_chunk = 512;
  bool exact = false;
  std::string dump_logits;
  bool json = false;
  // Text in, text out (src/text).
  std::string prompt;
  std::string prompt_file;
  std::string tokenizer;
  bool ignore_eos = false;
};

// The prompt's ids, and the tokenizer when the prompt is text: the
// tokenizer's special tokens (BOS) are added, as the model saw in training.
std::vector<std::int32_t> text_prompt_ids(const RunArgs& a, const std::optional<text::Tokenizer>& tokenizer) {
  const std::string text = !a.prompt_file.empty() ? read_text_file(a.prompt_file, "--prompt-file")
                           : a.prompt == "-"      ? read_text_file("-", "--prompt")
                                                  : a.prompt;
  std::vector<std::int32_t> ids = tokenizer->encode(text, true);
  if (ids.empty()) throw InvalidArgument("the prompt is empty and the tokenizer adds no BOS token: give some text");
  return ids;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double per_second(std::size_t n, double s) { return s > 0 ? static_cast<double>(n) / s : 0; }

int run(const RunArgs& a) {
  const DeviceSpec spec = parse_device(a.device);
  if (spec.cuda) refuse_cpu_only_flags(a.flags, a.exact, spec);
  // The device the weights, the KV cache and the activations live on; the
  // checkpoint is always mapped on the CPU (a GPU's weights are uploaded
  // from there). A GPU that cannot be used is refused before the load.
  Device& cpu = Device::cpu();
  Device& device = open_device(spec);
  apply_before_load(a.flags, device);

  auto t = std::chrono::steady_clock::now();
  std::optional<lm::Model> model(lm::load_model(cpu, a.model));
  std::optional<GpuModel> gpu_model;
  if (spec.cuda) gpu_model.emplace(device, *model);
  const double load_s = seconds_since(t);
  if (!spec.cuda) apply_after_load(a.flags, device);
  const lm::ModelConfig c = model->config();

  const bool text_in = !a.prompt.empty() || !a.prompt_file.empty();
  std::optional<text::Tokenizer> tokenizer;
  if (text_in || !a.tokenizer.empty()) tokenizer.emplace(load_tokenizer(a.model, a.tokenizer));
  if (tokenizer && tokenizer->vocab_size() > c.vocab_size) {
    throw InvalidArgument(fmt::format("the tokenizer has {} tokens but the model's vocabulary is {}: they do not belong "
                                      "together (--tokenizer)",
                                      tokenizer->vocab_size(), c.vocab_size));
  }
  // Checked before the prompt or the KV cache is sized by them (the options'
  // validators bound each number, so the sum cannot overflow).
  const bool given = text_in || !a.prompt_ids.empty();
  const std::vector<std::int32_t> ids = text_in              ? text_prompt_ids(a, tokenizer)
                                        : a.prompt_ids.empty() ? std::vector<std::int32_t>{}
                                                               : parse_token_ids(a.prompt_ids);
  const std::size_t prompt_len = given ? ids.size() : a.prompt_len;
  const std::size_t positions = a.context != 0 ? a.context : prompt_len + a.max_new;
  // On a GPU the KV cache holds bf16/f16: 2 bytes an element, as f16 does here.
  check_context(device, c, positions,
                a.context != 0 ? fmt::format("--context {}", a.context)
                               : fmt::format("a prompt of {} + --max-new {}", prompt_len, a.max_new),
                spec.cuda ? lm::KVCachePrecision::f16 : kv_cache_precision(a.flags));
  const std::vector<std::int32_t> prompt = given ? ids : synthetic_prompt(prompt_len, c.vocab_size);
  lm::SessionOptions options;
  options.context = positions;
  options.prefill_chunk = a.prefill_chunk;
  options.precision = a.exact ? lm::Precision::exact : lm::Precision::fast;
  options.kv_cache = kv_cache_precision(a.flags);
  ProgressLine prefill_progress("prefill");
  options.progress = std::ref(prefill_progress);
  const std::unique_ptr<Generation> session =
      gpu_model ? gpu_model->session(positions, a.prefill_chunk)
                : std::make_unique<CpuGeneration>(device, *model, options);
  lm::Sampler sampler(cpu, c.vocab_size, a.sampling);
  // The GPU's weights are its own copy: the checkpoint's mapping can go.
  if (gpu_model) model.reset();

  // One row of logits per token fed: the prompt's, then each decode step's.
  std::optional<LogitsFile> dump;
  if (!a.dump_logits.empty()) dump.emplace(a.dump_logits, prompt.size() + a.max_new - 1, c.vocab_size);
  const lm::LogitsSink sink = [&](std::size_t, std::span<const float> row) { dump->append(row); };

  // Generated text streams to stdout as each token completes a character;
  // generation stops at the tokenizer's end-of-turn ids unless --ignore-eos.
  std::optional<text::StreamDecoder> stream;
  if (tokenizer && !a.json) stream.emplace(*tokenizer);
  const auto stops = [&](std::int32_t id) {
    if (!tokenizer || a.ignore_eos) return false;
    const auto& ids = tokenizer->stop_ids();
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  const auto emit = [&](std::int32_t id) {
    if (!stream) return;
    const std::string piece = stream->push(id);
    if (!piece.empty()) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  };

  t = std::chrono::steady_clock::now();
  std::span<const float> logits = session->prefill(prompt, dump ? sink : lm::LogitsSink{});
  prefill_progress.finish();
  std::vector<std::int32_t> generated{sampler.sample(logits)};
  const double prefill_s = seconds_since(t);
  bool stopped = stops(generated.back());
  if (!stopped) emit(generated.back());

  generated.reserve(a.max_new);
  t = std::chrono::steady_clock::now();
  while (!stopped && generated.size() < a.max_new) {
    logits = session->decode(generated.back());
    if (dump) dump->append(logits);
    generated.push_back(sampler.sample(logits));
    stopped = stops(generated.back());
    if (!stopped) emit(generated.back());
  }
  const double decode_s = seconds_since(t);
  const std::size_t steps = generated.size() - 1;
  if (stream) {
    const std::string rest = stream->finish();
    fmt::print("{}\n", rest);
    std::fflush(stdout);  // the text before the timing line on stderr
  }
  if (dump) dump->close();

  if (a.json) {
    const nlohmann::ordered_json j = {
        {"model", a.model},
        {"prompt_tokens", prompt.size()},
        {"generated", generated},
        {"prompt_ids", prompt},
        // The text as streamed: without the end-of-sequence token it stopped at.
        {"text", tokenizer ? nlohmann::json(tokenizer->decode(std::span(generated).first(generated.size() - stopped), true))
                           : nlohmann::json(nullptr)},
        {"stopped_at_eos", stopped},
        {"load_s", load_s},
        {"prefill_s", prefill_s},
        {"prefill_tokens_per_s", per_second(prompt.size(), prefill_s)},
        {"decode_steps", steps},
        {"decode_s", decode_s},
        {"decode_tokens_per_s", per_second(steps, decode_s)},
        {"threads", lm::kernels::threads()},
        {"device", spec.name()},
    };
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return 0;
  }
  if (!stream) fmt::print("{}\n", fmt::join(generated, ","));
  fmt::print(stderr, "load {:.3f} s | prefill {} tokens in {:.3f} s: {:.1f} tokens/s | decode {} tokens in {:.3f} s: "
                     "{:.1f} tokens/s ({})\n",
             load_s, prompt.size(), prefill_s, per_second(prompt.size(), prefill_s), steps, decode_s,
             per_second(steps, decode_s),
             spec.cuda ? fmt::format("{}, {} weights", spec.name(), gpu_model->dtype_name())
                       : fmt::format("{} threads", lm::kernels::threads()));
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& parent) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* app = parent.add_subcommand("run", "Run a model on a prompt (text or token ids) and stream what it generates");
  app->footer(
      "MODEL is a directory with config.json and model.safetensors (or a sharded index):\n"
      "LlamaForCausalLM, MistralForCausalLM or Qwen2ForCausalLM; or a llama.cpp .gguf\n"
      "file (llama, qwen2; F32/F16/BF16 and Q8_0..Q6_K weights); without it, the built-in\n"
      "model. A text prompt (--prompt, --prompt-file) is tokenized with the model's\n"
      "tokenizer.json or GGUF vocabulary (or --tokenizer), its BOS added, and the\n"
      "generated text streams to stdout as it comes, stopping at the end-of-sequence\n"
      "token (--ignore-eos: run to --max-new). A prompt of ids (--prompt-ids) or a\n"
      "synthetic one (--prompt-len) prints the generated ids (comma-separated). --json\n"
      "prints ids and text as JSON. The speed of loading, prefill (prompt tokens/s) and\n"
      "decode (generated tokens/s, not counting the first, which the prefill yields)\n"
      "goes to stderr. Greedy by default. --device cuda (or cuda:N) runs it on a GPU:\n"
      "the weights uploaded (bf16/f16 checkpoints), the KV cache and activations in\n"
      "the checkpoint's dtype; the tokens are chosen on the host as on the CPU.");
  app->add_option("MODEL", a->model, "model directory, or a .gguf file (default: the built-in model)")
      ->check(CLI::ExistingPath);
  auto* ids = app->add_option("--prompt-ids", a->prompt_ids, "prompt token ids, e.g. 1,2,3");
  auto* len = app->add_option("--prompt-len", a->prompt_len, "a synthetic prompt of this many tokens")
                  ->transform(whole_number_in(1, kMaxTokens, "tokens"));
  auto* text = app->add_option("--prompt", a->prompt, "the prompt as text ('-': read it from standard input)");
  auto* file = app->add_option("--prompt-file", a->prompt_file, "read the prompt text from this file ('-': stdin)");
  ids->excludes(len)->excludes(text)->excludes(file);
  len->excludes(ids)->excludes(text)->excludes(file);
  text->excludes(file);
  app->add_option("--tokenizer", a->tokenizer, "tokenizer.json, directory or .gguf (default: the model's own)");
  app->add_flag("--ignore-eos", a->ignore_eos, "generate --max-new tokens even past the end-of-sequence token");
  app->add_option("--max-new", a->max_new, "tokens to generate")
      ->default_val(a->max_new)
      ->transform(whole_number_in(1, kMaxTokens, "tokens"));
  add_device_option(*app, a->device);
  app->add_option("--temperature", a->sampling.temperature, "0: greedy")->default_val(0);
  app->add_option("--top-p", a->sampling.top_p, "nucleus sampling threshold")->default_val(1);
  app->add_option("--seed", a->sampling.seed, "sampling seed")->default_val(0);
  add_model_flags(*app, a->flags);
  app->add_option("--context", a->context, "KV cache positions (default: prompt + max-new)")
      ->transform(whole_number_in(1, kMaxTokens, "positions"));
  app->add_option("--prefill-chunk", a->prefill_chunk, "prompt tokens per forward pass")
      ->default_val(512)
      ->transform(whole_number_in(1, kMaxTokens, "tokens"));
  app->add_flag("--exact", a->exact,
                "bf16 weights: compute prompt products in f32 rather than rounding activations to bf16");
  app->add_option("--dump-logits", a->dump_logits,
                  "write every fed token's logits to this .npy (float32 [prompt + max-new - 1, vocab])");
  app->add_flag("--json", a->json, "print a JSON object instead");
  return {app, [a, ids, len, text, file] {
            if (ids->count() == 0 && len->count() == 0 && text->count() == 0 && file->count() == 0) {
              throw InvalidArgument("give a prompt: --prompt \"text\", --prompt-file FILE, --prompt-ids 1,2,3 or --prompt-len N");
            }
            if (a->model.empty()) a->model = ensure_builtin_model().string();
            return run(*a);
          }};
}

}  // namespace nuvec::tool
