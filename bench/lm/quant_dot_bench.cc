// quant_linear() on its integer path (AVX-512 VNNI, with a workspace), the
// products of decode (m = 1), a few rows (m = 4) and prefill (m = 64), per
// weight type: how many GB of weights per second a thread pulls and how
// many multiply-adds it does (issue 14). Shapes of k = 2048 (the 1.1B
// model's hidden size): n = 512 rows, whose weights stay in L2 (the
// kernel's own speed), n = 32768 rows (71 MB of Q8_0: past the L3 of the
// development machine, not of every server) and n = 131072 (285 MB of
// Q8_0, 151 MB of Q4_0: from memory, as decode reads its weights). Threads 1 and 2
// (NUVEC_BENCH_THREADS="1 4 16" for others).
//
//   nuvec_quant_dot_bench [--benchmark_filter=q8_0] ...
// Counters: GB/s (bytes of weights read per second), GMAC/s.
// Compare two builds with bench/lm/run_quant_dot_bench.sh.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lm/kernels/quant_linear.h"
#include "nuvec/lm/kernels.h"

namespace {

using nuvec::lm::kernels::QuantType;

struct TypeInfo {
  QuantType type;
  const char* name;
  std::vector<int> f16_fields;  // byte offsets of the block's f16 scales
};

const TypeInfo kTypes[] = {
    {QuantType::q8_0, "q8_0", {0}},
    {QuantType::q4_0, "q4_0", {0}},
    {QuantType::q4_k, "q4_k", {0, 2}},
    {QuantType::q6_k, "q6_k", {208}},
};

// Random blocks with small finite f16 scales (random bytes elsewhere).
std::vector<std::uint8_t> random_weights(const TypeInfo& t, std::size_t n, std::size_t k) {
  const std::size_t bytes = nuvec::lm::kernels::quant_block_bytes(t.type);
  const std::size_t blocks = n * k / nuvec::lm::kernels::quant_block_elements(t.type);
  std::vector<std::uint8_t> w(blocks * bytes);
  std::mt19937 rng(14);
  for (std::size_t i = 0; i + 4 <= w.size(); i += 4) {
    const std::uint32_t r = rng();
    std::memcpy(w.data() + i, &r, 4);
  }
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (std::size_t b = 0; b < blocks; ++b) {
    for (int at : t.f16_fields) {
      const auto h = static_cast<_Float16>(scale(rng));
      std::memcpy(w.data() + b * bytes + at, &h, 2);
    }
  }
  return w;
}

void product(benchmark::State& state, const TypeInfo& t, std::size_t m, std::size_t n, int threads) {
  constexpr std::size_t k = 2048;
  const std::size_t workspace_bytes = nuvec::lm::kernels::quant_linear_workspace_bytes(m, k);
  if (workspace_bytes == 0) {
    state.SkipWithError("no integer path on this CPU (AVX-512 VNNI)");
    return;
  }
  nuvec::lm::kernels::set_threads(threads);
  const auto w = random_weights(t, n, k);
  std::vector<float> x(m * k), y(m * n);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& v : x) v = normal(rng);
  const auto workspace = std::make_unique<std::uint8_t[]>(workspace_bytes);
  for (auto _ : state) {
    nuvec::lm::kernels::quant_linear(x.data(), m, k, w.data(), t.type, n, y.data(), workspace.get());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(calls * static_cast<double>(w.size()) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GMAC/s"] =
      benchmark::Counter(calls * static_cast<double>(m * n * k) / 1e9, benchmark::Counter::kIsRate);
}

// The thread counts: NUVEC_BENCH_THREADS (e.g. "1 4 16"), default 1 and 2.
std::vector<int> thread_counts() {
  std::vector<int> counts;
  const char* env = std::getenv("NUVEC_BENCH_THREADS");
  std::istringstream in(env != nullptr ? env : "1 2");
  for (int t; in >> t;) counts.push_back(t);
  return counts;
}

const int registered = [] {
  for (const TypeInfo& t : kTypes) {
    for (std::size_t n : {std::size_t{512}, std::size_t{2048}, std::size_t{32768}, std::size_t{131072}}) {
      for (std::size_t m : {std::size_t{1}, std::size_t{4}, std::size_t{64}, std::size_t{512}}) {
        // m64 n512: one pass of prefill-shaped work in cache; m512 n2048: a
        // whole 512-token prompt through a 2048 x 2048 layer (passes of
        // kQuantDotRowsPerPass rows, the weights past L2); the others decode.
        const bool prefill = (m == 64 && n == 512) || (m == 512 && n == 2048);
        const bool decode = m <= 4 && n != 2048;
        if (!prefill && !decode) continue;
        for (int threads : thread_counts()) {
          const std::string name = std::string(t.name) + "/m" + std::to_string(m) + "/n" + std::to_string(n) +
                                   "/threads" + std::to_string(threads);
          auto* b = benchmark::RegisterBenchmark(name.c_str(), [&t, m, n, threads](benchmark::State& s) {
            product(s, t, m, n, threads);
          });
          // One thread: rates per CPU second of the process (the calling
          // thread does all the work), which other processes on a shared
          // machine disturb less than wall-clock ones; more threads: wall clock.
          b->MinTime(0.2);
          if (threads > 1) b->UseRealTime();
        }
      }
    }
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
