// The LM runtime's speed against the machine's bounds, measured in one run:
//   decode tokens/s  vs  read bandwidth (all threads) / weight bytes per token
//   prefill FLOP/s   vs  linear()'s GEMM rate on the model's own shapes
// Each figure is the median of --repetitions runs, interleaved with the
// bound measurements (bandwidth, then decode, then GEMM, then prefill, per
// repetition) so that a noisy neighbour hits both sides alike.
// Prints one JSON object. Usage: nuvec_lm_runtime_bench MODEL_DIR
//   [--prompt N] [--decode-steps N] [--repetitions N] [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lm/kernels/linear.h"
#include "lm/kernels/machine_roofline.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/sampler.h"
#include "nuvec/lm/session.h"
#include "support/median.h"

namespace {

using nuvec_bench::median;

using Clock = std::chrono::steady_clock;
namespace lm = nuvec::lm;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

lm::kernels::WeightType weight_type(lm::DType d) {
  return d == lm::DType::f32 ? lm::kernels::WeightType::f32
         : d == lm::DType::f16 ? lm::kernels::WeightType::f16
                               : lm::kernels::WeightType::bf16;
}

// FLOPs of a prefill of `n` tokens from position 0: every layer's linear
// layers for every token, the LM head for the last, and attention (q·k and
// p·v, 2 FLOPs per multiply-add) over the causal triangle.
double prefill_flops(const lm::ModelConfig& c, std::size_t n, double* linear_only) {
  const double h = static_cast<double>(c.hidden_size), ff = static_cast<double>(c.intermediate_size);
  const double per_token = 2.0 * c.num_hidden_layers *
                           (h * static_cast<double>(c.q_dim()) * 2 + h * static_cast<double>(c.kv_dim()) * 2 +
                            3 * h * ff);
  *linear_only = per_token * static_cast<double>(n) + 2.0 * h * static_cast<double>(c.vocab_size);
  const double pairs = static_cast<double>(n) * static_cast<double>(n + 1) / 2;
  const double attention = 4.0 * pairs * static_cast<double>(c.head_dim * c.num_attention_heads) *
                           static_cast<double>(c.num_hidden_layers);
  return *linear_only + attention;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [--prompt N] [--decode-steps N] [--repetitions N] [--threads N]\n",
                 argv[0]);
    return 2;
  }
  std::size_t prompt_len = 512, steps = 64;
  int repetitions = 5, threads = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--prompt") prompt_len = static_cast<std::size_t>(value);
    else if (flag == "--decode-steps") steps = static_cast<std::size_t>(value);
    else if (flag == "--repetitions") repetitions = static_cast<int>(value);
    else if (flag == "--threads") threads = static_cast<int>(value);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (threads > 0) lm::kernels::set_threads(threads);
  nuvec::Device& device = nuvec::Device::cpu();
  const lm::Model model = lm::load_model(device, argv[1]);
  const lm::ModelConfig& c = model.config();
  const auto type = weight_type(model.weights().layers[0].gate_proj.dtype());

  std::vector<std::int32_t> prompt(prompt_len);
  for (std::size_t i = 0; i < prompt_len; ++i) prompt[i] = static_cast<std::int32_t>((i * 7919 + 11) % c.vocab_size);
  lm::SessionOptions options;
  options.context = prompt_len + steps + 1;
  lm::Session session(device, model, options);

  // Warm-up: fault the mapping in and start the thread pool.
  session.prefill(prompt);
  session.clear();

  std::vector<double> bandwidth, bandwidth_one, decode_rate, gemm_rate, prefill_seconds;
  for (int r = 0; r < repetitions; ++r) {
    bandwidth.push_back(lm::kernels::measure_read_bandwidth(lm::kernels::threads()).bytes_per_second);
    bandwidth_one.push_back(lm::kernels::measure_read_bandwidth(1).bytes_per_second);

    // Decode after a short prompt, so that the weights dominate what is read.
    session.clear();
    std::int32_t token = lm::argmax(session.prefill(std::span(prompt).first(16)));
    token = lm::argmax(session.decode(token));  // the first step takes its buffers
    auto t = Clock::now();
    for (std::size_t i = 0; i < steps; ++i) token = lm::argmax(session.decode(token));
    decode_rate.push_back(static_cast<double>(steps) / seconds_since(t));

    // The GEMM bound: linear() on the largest product of a prefill chunk.
    gemm_rate.push_back(
        lm::kernels::measure_linear_rate(std::min<std::size_t>(prompt_len, 512), c.hidden_size, c.intermediate_size,
                                         type)
            .flops_per_second);

    session.clear();
    t = Clock::now();
    session.prefill(prompt);
    prefill_seconds.push_back(seconds_since(t));
  }

  double linear_flops = 0;
  const double flops = prefill_flops(c, prompt_len, &linear_flops);
  const double bw = median(bandwidth);
  const double bytes_per_token = static_cast<double>(model.weight_bytes_per_token());
  const double decode = median(decode_rate);
  const double decode_bound = bw / bytes_per_token;
  const double prefill_s = median(prefill_seconds);
  const double gemm = median(gemm_rate);

  nlohmann::ordered_json j;
  j["model"] = argv[1];
  j["threads"] = lm::kernels::threads();
  j["kernels"] = lm::kernels::linear_isa();
  j["repetitions"] = repetitions;
  j["weight_bytes"] = model.weight_bytes();
  j["weight_bytes_per_token"] = model.weight_bytes_per_token();
  j["read_bandwidth_all_threads"] = bw;
  j["read_bandwidth_one_thread"] = median(bandwidth_one);
  j["decode"] = {{"steps", steps},
                 {"tokens_per_second", decode},
                 {"bound_tokens_per_second", decode_bound},
                 {"fraction_of_bound", decode / decode_bound},
                 {"achieved_bytes_per_second", decode * bytes_per_token},
                 {"runs", decode_rate}};
  j["prefill"] = {{"tokens", prompt_len},
                  {"seconds", prefill_s},
                  {"tokens_per_second", static_cast<double>(prompt_len) / prefill_s},
                  {"flops", flops},
                  {"linear_flops", linear_flops},
                  {"flops_per_second", flops / prefill_s},
                  {"gemm_flops_per_second", gemm},
                  {"gemm_shape", fmt::format("{}x{}x{}", std::min<std::size_t>(prompt_len, 512), c.hidden_size,
                                             c.intermediate_size)},
                  {"fraction_of_gemm", flops / prefill_s / gemm},
                  {"runs", prefill_seconds}};
  j["bandwidth_runs"] = bandwidth;
  j["gemm_runs"] = gemm_rate;
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}
