// f32 against f16 KV cache, side by side in one process: two sessions on one
// model, one per precision, fed the same tokens in alternation (a prefill
// chunk to one, the same chunk to the other; then a decode step to one, a
// step to the other), so that a loaded machine's noise falls on both alike.
// Prints one JSON object: per precision the median seconds of a prefill
// chunk and of a decode step at a long context (after the prompt) and at a
// short one (a fresh pair of sessions after a 16-token prompt), and the
// ratios f32 time / f16 time (above 1: f16 is faster).
// Usage: nuvec_kv_cache_bench MODEL_DIR [--prompt N] [--decode-steps N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nuvec/lm/model.h"
#include "nuvec/lm/session.h"
#include "support/median.h"

namespace {

namespace lm = nuvec::lm;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Times `call` on each session in turn, `rounds` times; t[0]: f32, t[1]: f16.
template <class Call>
void alternate(lm::Session (&s)[2], int rounds, std::vector<double> (&t)[2], const Call& call) {
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < 2; ++i) {
      const int k = (r % 2 == 0) ? i : 1 - i;  // who goes first alternates too
      const auto start = Clock::now();
      call(s[k], r);
      t[k].push_back(seconds_since(start));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [--prompt N] [--decode-steps N]\n", argv[0]);
    return 2;
  }
  std::size_t prompt_len = 2048, steps = 64;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const auto value = static_cast<std::size_t>(std::strtoul(argv[i + 1], nullptr, 10));
    if (flag == "--prompt") prompt_len = value;
    else if (flag == "--decode-steps") steps = value;
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  auto device = nuvec::Device::create_cpu();
  const lm::Model model = lm::load_model(*device, argv[1]);
  const std::size_t vocab = model.config().vocab_size;
  std::vector<std::int32_t> prompt(prompt_len);
  for (std::size_t i = 0; i < prompt_len; ++i) prompt[i] = static_cast<std::int32_t>((i * 7919 + 13) % vocab);
  const auto token = [&](int r) { return static_cast<std::int32_t>((r * 104729 + 7) % vocab); };

  nlohmann::ordered_json j;
  j["model"] = argv[1];
  j["prompt"] = prompt_len;
  j["decode_steps"] = steps;
  const auto make = [&](std::size_t context) {
    lm::SessionOptions f32, f16;
    f32.context = f16.context = context;
    f16.kv_cache = lm::KVCachePrecision::f16;
    f32.kv_cache = lm::KVCachePrecision::f32;
    return std::pair{lm::Session(*device, model, f32), lm::Session(*device, model, f16)};
  };
  const auto report = [&](const char* name, std::vector<double> (&t)[2]) {
    const double a = nuvec_bench::median(t[0]), b = nuvec_bench::median(t[1]);
    j[name] = {{"f32_seconds", a}, {"f16_seconds", b}, {"f32_over_f16", a / b}, {"samples", t[0].size()}};
  };
  {
    auto [a, b] = make(prompt_len + steps);
    lm::Session s[2] = {std::move(a), std::move(b)};
    std::vector<double> prefill[2], decode[2];
    const std::size_t chunk = 512;
    const int chunks = static_cast<int>((prompt_len + chunk - 1) / chunk);
    alternate(s, chunks, prefill, [&](lm::Session& x, int r) {
      const std::size_t from = static_cast<std::size_t>(r) * chunk;
      x.prefill(std::span<const std::int32_t>(prompt).subspan(from, std::min(chunk, prompt_len - from)));
    });
    for (auto& x : s) x.release_activations();
    alternate(s, static_cast<int>(steps), decode, [&](lm::Session& x, int r) { x.decode(token(r)); });
    report("prefill_chunk_long", prefill);
    report("decode_step_long", decode);
    j["kv_cache_bytes"] = {{"f32", s[0].kv_cache_bytes()}, {"f16", s[1].kv_cache_bytes()}};
  }
  {
    auto [a, b] = make(16 + steps);
    lm::Session s[2] = {std::move(a), std::move(b)};
    for (auto& x : s) x.prefill(std::span<const std::int32_t>(prompt).first(std::min<std::size_t>(16, prompt_len)));
    for (auto& x : s) x.release_activations();
    std::vector<double> decode[2];
    alternate(s, static_cast<int>(steps), decode, [&](lm::Session& x, int r) { x.decode(token(r)); });
    report("decode_step_short", decode);
  }
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}
