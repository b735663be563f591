// `nuvec run MODEL`: loads a model, runs a prompt through it and generates
// tokens (greedy, or sampled with --temperature/--top-p/--seed), printing
// the generated token ids and the speed of each phase.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli_numbers.h"
#include "command.h"
#include "context_budget.h"
#include "lm/kernels/thread_pool.h"
#include "lm_prompt.h"
#include "logits_file.h"
#include "nuvec/error.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/sampler.h"
#include "nuvec/lm/session.h"

namespace nuvec::tool {
namespace {

struct RunArgs {
  std::string model;
  std::string prompt_ids;
  std::size_t prompt_len = 0;
  std::size_t max_new = 32;
  std::string device = "cpu";
  lm::SamplingOptions sampling;
  int threads = 0;
  std::size_t context = 0;
  std::size_t prefill_chunk = 512;
  bool exact = false;
  std::string dump_logits;
  bool json = false;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double per_second(std::size_t n, double s) { return s > 0 ? static_cast<double>(n) / s : 0; }

int run(const RunArgs& a) {
  if (a.device != "cpu") {
    throw InvalidArgument(fmt::format("device '{}' is not supported by `nuvec run`: it runs on cpu", a.device));
  }
  if (a.threads > 0) lm::kernels::set_threads(a.threads);
  Device& device = Device::cpu();

  auto t = std::chrono::steady_clock::now();
  const lm::Model model = lm::load_model(device, a.model);
  const double load_s = seconds_since(t);
  const lm::ModelConfig& c = model.config();

  // Checked before the prompt or the KV cache is sized by them (the options'
  // validators bound each number, so the sum cannot overflow).
  const std::vector<std::int32_t> ids = a.prompt_ids.empty() ? std::vector<std::int32_t>{} : parse_token_ids(a.prompt_ids);
  const std::size_t prompt_len = a.prompt_ids.empty() ? a.prompt_len : ids.size();
  const std::size_t positions = a.context != 0 ? a.context : prompt_len + a.max_new;
  check_context(device, c, positions,
                a.context != 0 ? fmt::format("--context {}", a.context)
                               : fmt::format("a prompt of {} + --max-new {}", prompt_len, a.max_new));
  const std::vector<std::int32_t> prompt = a.prompt_ids.empty() ? synthetic_prompt(prompt_len, c.vocab_size) : ids;
  lm::SessionOptions options;
  options.context = positions;
  options.prefill_chunk = a.prefill_chunk;
  options.precision = a.exact ? lm::Precision::exact : lm::Precision::fast;
  lm::Session session(device, model, options);
  lm::Sampler sampler(device, c.vocab_size, a.sampling);

  // One row of logits per token fed: the prompt's, then each decode step's.
  std::optional<LogitsFile> dump;
  if (!a.dump_logits.empty()) dump.emplace(a.dump_logits, prompt.size() + a.max_new - 1, c.vocab_size);
  const lm::LogitsSink sink = [&](std::size_t, std::span<const float> row) { dump->append(row); };

  t = std::chrono::steady_clock::now();
  std::span<const float> logits = session.prefill(prompt, dump ? sink : lm::LogitsSink{});
  std::vector<std::int32_t> generated{sampler.sample(logits)};
  const double prefill_s = seconds_since(t);

  generated.reserve(a.max_new);
  t = std::chrono::steady_clock::now();
  while (generated.size() < a.max_new) {
    logits = session.decode(generated.back());
    if (dump) dump->append(logits);
    generated.push_back(sampler.sample(logits));
  }
  const double decode_s = seconds_since(t);
  const std::size_t steps = a.max_new - 1;
  if (dump) dump->close();

  if (a.json) {
    const nlohmann::ordered_json j = {
        {"model", a.model},
        {"prompt_tokens", prompt.size()},
        {"generated", generated},
        {"load_s", load_s},
        {"prefill_s", prefill_s},
        {"prefill_tokens_per_s", per_second(prompt.size(), prefill_s)},
        {"decode_steps", steps},
        {"decode_s", decode_s},
        {"decode_tokens_per_s", per_second(steps, decode_s)},
        {"threads", lm::kernels::threads()},
    };
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{}\n", fmt::join(generated, ","));
  fmt::print(stderr, "load {:.3f} s | prefill {} tokens in {:.3f} s: {:.1f} tokens/s | decode {} tokens in {:.3f} s: "
                     "{:.1f} tokens/s ({} threads)\n",
             load_s, prompt.size(), prefill_s, per_second(prompt.size(), prefill_s), steps, decode_s,
             per_second(steps, decode_s), lm::kernels::threads());
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& parent) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* app = parent.add_subcommand("run", "Run a model on a prompt and print the generated token ids");
  app->footer(
      "MODEL is a directory with config.json and model.safetensors (or a sharded index):\n"
      "LlamaForCausalLM, MistralForCausalLM or Qwen2ForCausalLM; or a llama.cpp .gguf\n"
      "file (llama, qwen2; F32/F16/BF16 and Q8_0..Q6_K weights). There is no tokenizer:\n"
      "the prompt is token ids (--prompt-ids) or a fixed synthetic prompt of a length\n"
      "(--prompt-len). Prints the generated ids (comma-separated) on stdout and the\n"
      "speed of loading, prefill (prompt tokens/s) and decode (generated tokens/s, not\n"
      "counting the first, which the prefill yields) on stderr. Greedy by default.");
  app->add_option("MODEL", a->model, "model directory, or a .gguf file")->required()->check(CLI::ExistingPath);
  auto* ids = app->add_option("--prompt-ids", a->prompt_ids, "prompt token ids, e.g. 1,2,3");
  auto* len = app->add_option("--prompt-len", a->prompt_len, "a synthetic prompt of this many tokens")
                  ->transform(whole_number_in(1, kMaxTokens, "tokens"));
  ids->excludes(len);
  len->excludes(ids);
  app->add_option("--max-new", a->max_new, "tokens to generate")
      ->default_val(a->max_new)
      ->transform(whole_number_in(1, kMaxTokens, "tokens"));
  app->add_option("--device", a->device, "where to run (cpu)")->default_val(a->device);
  app->add_option("--temperature", a->sampling.temperature, "0: greedy")->default_val(0);
  app->add_option("--top-p", a->sampling.top_p, "nucleus sampling threshold")->default_val(1);
  app->add_option("--seed", a->sampling.seed, "sampling seed")->default_val(0);
  app->add_option("--threads", a->threads, "kernel threads (default: the CPUs this process may use)")
      ->transform(thread_count());
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
  return {app, [a, ids, len] {
            if (ids->count() == 0 && len->count() == 0) {
              throw InvalidArgument("give a prompt: --prompt-ids 1,2,3 or --prompt-len N");
            }
            return run(*a);
          }};
}

}  // namespace nuvec::tool
