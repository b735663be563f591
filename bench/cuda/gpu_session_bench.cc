// The LM runtime on a GPU, warm, as llama-bench measures llama.cpp: prefill
// of --prompt tokens (pp) and decode of --decode tokens from an empty
// context (tg), each repeated --repetitions times after one untimed
// warm-up of both (the first use loads the kernels' modules and plans the
// cuBLASLt products; `nuvec profile` reports that cold first pass, this
// does not). Greedy on the device, as `nuvec run --device cuda`: a step
// waits only for its token id, so each timing ends when the GPU is done.
// Prints one JSON object: medians and every repetition, plus the cold
// first prefill and decode for reference. Decode runs twice per repetition:
// replayed as CUDA graphs (the default, SessionOptions::decode_graphs) and
// launched kernel by kernel, in a second session on the same weights.
// Usage: nuvec_gpu_session_bench MODEL (a directory or .gguf)
//   [--prompt N] [--decode N] [--repetitions N] [--device N]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nuvec/device.h"
#include "nuvec/lm/gpu_session.h"
#include "nuvec/lm/model.h"
#include "support/median.h"

namespace {

namespace lm = nuvec::lm;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::size_t whole(const char* flag, const char* text, unsigned long long least) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || text[0] == '-' || v < least || v > (1ull << 24)) {
    throw std::invalid_argument(
        fmt::format("{} takes a whole number from {} to 16777216, not '{}'", flag, least, text));
  }
  return static_cast<std::size_t>(v);
}

struct Timing {
  double prefill_s = 0, decode_s = 0;
};

// One pass: a prefill of `prompt` tokens, then `steps` decode steps from
// an empty context (llama-bench's tg starts from none), the session
// cleared before each.
Timing one_pass(lm::gpu::Session& session, const std::vector<std::int32_t>& prompt, std::size_t steps) {
  Timing t;
  session.clear();
  auto start = Clock::now();
  session.prefill_greedy(prompt);
  t.prefill_s = seconds_since(start);
  session.clear();
  std::int32_t token = prompt.front();
  start = Clock::now();
  for (std::size_t i = 0; i < steps; ++i) token = session.decode_greedy(token);
  t.decode_s = seconds_since(start);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) {
      std::fprintf(stderr, "usage: %s MODEL [--prompt N] [--decode N] [--repetitions N] [--device N]\n", argv[0]);
      return 2;
    }
    std::size_t prompt_len = 512, steps = 128, reps = 5, ordinal = 0;
    for (int i = 2; i < argc; i += 2) {
      const std::string flag = argv[i];
      if (i + 1 >= argc) throw std::invalid_argument(fmt::format("{} needs a value", flag));
      if (flag == "--prompt") prompt_len = whole("--prompt", argv[i + 1], 1);
      else if (flag == "--decode") steps = whole("--decode", argv[i + 1], 1);
      else if (flag == "--repetitions") reps = whole("--repetitions", argv[i + 1], 1);
      else if (flag == "--device") ordinal = whole("--device", argv[i + 1], 0);
      else throw std::invalid_argument(fmt::format("unknown option '{}'", flag));
    }
    std::string why;
    if (!lm::gpu::gpu_available(static_cast<int>(ordinal), &why)) {
      std::fprintf(stderr, "no GPU: %s\n", why.c_str());
      return 1;
    }
    nuvec::Device& gpu = nuvec::Device::cuda(static_cast<int>(ordinal));
    auto start = Clock::now();
    const lm::Model model = lm::load_model(nuvec::Device::cpu(), argv[1]);
    const double map_s = seconds_since(start);
    start = Clock::now();
    const lm::gpu::Weights weights(gpu, model);
    const double upload_s = seconds_since(start);
    lm::gpu::SessionOptions options;
    options.context = std::max(prompt_len, steps);
    lm::gpu::Session session(weights, options);
    // Decode launched kernel by kernel beside it, on the same weights: what
    // the CUDA graphs gain (or not), in the same run.
    options.decode_graphs = false;
    lm::gpu::Session launched(weights, options);

    // A prompt of ids spread over the vocabulary, the same every run.
    std::vector<std::int32_t> prompt(prompt_len);
    const auto vocab = static_cast<std::int64_t>(model.config().vocab_size);
    for (std::size_t i = 0; i < prompt_len; ++i) prompt[i] = static_cast<std::int32_t>((i * 7919 + 1) % vocab);

    const Timing cold = one_pass(session, prompt, steps);
    one_pass(launched, prompt, steps);
    std::vector<double> pp, tg, tg_launched;
    for (std::size_t r = 0; r < reps; ++r) {
      const Timing t = one_pass(session, prompt, steps);
      pp.push_back(static_cast<double>(prompt_len) / t.prefill_s);
      tg.push_back(static_cast<double>(steps) / t.decode_s);
      tg_launched.push_back(static_cast<double>(steps) / one_pass(launched, prompt, steps).decode_s);
    }
    const lm::gpu::DecodeLaunches graphs = session.decode_launches();
    nlohmann::json out = {
        {"model", argv[1]},
        {"dtype", std::string(weights.dtype_name())},
        {"weights_bytes", weights.bytes()},
        {"map_s", map_s},
        {"upload_s", upload_s},
        {"prompt", prompt_len},
        {"decode", steps},
        {"repetitions", reps},
        {"cold_prefill_tokens_per_s", static_cast<double>(prompt_len) / cold.prefill_s},
        {"cold_decode_tokens_per_s", static_cast<double>(steps) / cold.decode_s},
        {"prefill_tokens_per_s", nuvec_bench::median(pp)},
        {"decode_tokens_per_s", nuvec_bench::median(tg)},
        {"prefill_runs", pp},
        {"decode_runs", tg},
        {"decode_graphs", graphs.graphs},
        {"decode_graph_captures", graphs.captures},
        {"decode_graph_replays", graphs.replays},
        {"decode_steps", graphs.steps},
        {"decode_graphs_off_why", graphs.why_not},
        {"decode_launched_tokens_per_s", nuvec_bench::median(tg_launched)},
        {"decode_launched_runs", tg_launched},
    };
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nuvec_gpu_session_bench: %s\n", e.what());
    return 1;
  }
}
