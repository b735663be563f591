// Tiled attention with an online softmax against the textbook computation:
// the full score matrix, a causal (and windowed) mask, softmax, weighted sum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "lm/attention.h"
#include "lm/half_convert.h"
#include "lm/kernels/thread_pool.h"
#include "lm/kv_cache.h"
#include "nuvec/error.h"

namespace {

namespace attention = nuvec::lm::attention;

struct Case {
  std::size_t heads, kv_heads, head_dim, first, rows, window;
};

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

using nuvec::lm::kernels::Isa;

// Runs attention on `isa` with exactly the scratch attend() asks for (one
// block per kernel thread), followed by a guard that must stay untouched,
// and checks every output against the textbook computation; returns them.
// `software_tiles`: the AMX path with the tile instructions in software
// instead of `isa`'s kernels; `bound`: the largest difference allowed.
// With an f16 cache the textbook computation reads the keys and values as
// the cache holds them (rounded to f16), so the bound stays that of f32: it
// checks that every half is widened and used where it belongs.
using nuvec::lm::KVCachePrecision;
std::vector<float> check_with(Isa isa, const Case& c, bool software_tiles = false, double bound = 2e-5,
                              nuvec::lm::kernels::Precision precision = nuvec::lm::kernels::Precision::fast,
                              KVCachePrecision kv = KVCachePrecision::f32) {
  auto device = nuvec::Device::create_cpu();
  nuvec::lm::ModelConfig config;
  config.num_hidden_layers = 2;
  config.num_attention_heads = c.heads;
  config.num_key_value_heads = c.kv_heads;
  config.head_dim = c.head_dim;
  const std::size_t positions = c.first + c.rows;
  const nuvec::lm::KVCache cache(*device, config, positions + 5, attention::kKeys, kv);  // room to spare
  const std::size_t kv_width = c.kv_heads * c.head_dim, q_width = c.heads * c.head_dim;
  auto keys = random_floats(positions * kv_width, 1), values = random_floats(positions * kv_width, 2);
  const std::size_t layer = 1;
  cache.store(layer, 0, positions, keys.data(), values.data());
  if (kv == KVCachePrecision::f16) {
    for (auto* v : {&keys, &values}) {
      for (float& x : *v) x = nuvec::lm::half::to_f32(nuvec::lm::half::from_f32(x));
    }
  }
  const auto q = random_floats(c.rows * q_width, 3);

  const attention::Shape shape{c.heads, c.kv_heads, c.head_dim, c.window};
  const std::size_t scratch_size =
      attention::scratch_floats(shape) * static_cast<std::size_t>(nuvec::lm::kernels::threads());
  constexpr std::size_t kGuard = 1024;
  constexpr float kUntouched = -12345.0f;
  std::vector<float> scratch(scratch_size + kGuard, kUntouched);
  std::vector<float> out(c.rows * q_width, std::nanf(""));  // every output must be written
  if (software_tiles) {
    attention::attend_on_software_tiles(q.data(), c.rows, c.first, cache, layer, shape, out.data(), scratch.data());
  } else {
    attention::attend_with(isa, q.data(), c.rows, c.first, cache, layer, shape, out.data(), scratch.data(),
                           precision);
  }
  std::size_t past = 0;  // how far past the scratch attention wrote
  for (std::size_t i = scratch_size; i < scratch.size(); ++i)
    if (scratch[i] != kUntouched) past = i - scratch_size + 1;
  EXPECT_EQ(past, 0u) << "attention wrote past the scratch it asked for";

  const std::size_t group = c.heads / c.kv_heads;
  double worst = 0;
  for (std::size_t r = 0; r < c.rows; ++r) {
    const std::size_t p = c.first + r;
    for (std::size_t h = 0; h < c.heads; ++h) {
      const std::size_t g = h / group;
      std::vector<double> s(p + 1, -std::numeric_limits<double>::infinity());
      double m = -std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j <= p; ++j) {
        if (c.window != 0 && p - j >= c.window) continue;
        double dot = 0;
        for (std::size_t d = 0; d < c.head_dim; ++d) {
          dot += double{q[r * q_width + h * c.head_dim + d]} * keys[j * kv_width + g * c.head_dim + d];
        }
        s[j] = dot / std::sqrt(double(c.head_dim));
        m = std::max(m, s[j]);
      }
      double total = 0;
      for (double& x : s) total += (x = std::exp(x - m));
      for (std::size_t d = 0; d < c.head_dim; ++d) {
        double o = 0;
        for (std::size_t j = 0; j <= p; ++j) o += s[j] / total * values[j * kv_width + g * c.head_dim + d];
        const double diff = std::abs(out[r * q_width + h * c.head_dim + d] - o);
        worst = std::max(worst, std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff);
      }
    }
  }
  EXPECT_LT(worst, bound) << (software_tiles ? "software tiles" : nuvec::lm::kernels::isa_name(isa)) << " heads " << c.heads << "/" << c.kv_heads
                         << " head_dim " << c.head_dim << " first " << c.first << " rows " << c.rows << " window "
                         << c.window;
  return out;
}

// Every instruction set this CPU has (the portable loops, AVX2, AVX-512),
// with an f32 cache and with an f16 one.
void check(const Case& c) {
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512}) {
    if (!nuvec::lm::kernels::isa_allowed(isa)) continue;
    check_with(isa, c);
    check_with(isa, c, false, 2e-5, nuvec::lm::kernels::Precision::fast, KVCachePrecision::f16);
  }
}

TEST(Attention, OneQueryRowAgainstFewKeys) { check({4, 2, 8, 0, 1, 0}); }
TEST(Attention, DecodeStepDeepInTheCache) { check({8, 2, 16, 200, 1, 0}); }
TEST(Attention, PrefillAcrossSeveralQueryAndKeyTiles) { check({4, 1, 32, 0, 150, 0}); }
TEST(Attention, ChunkAfterEarlierChunks) { check({6, 3, 8, 70, 37, 0}); }
TEST(Attention, MultiHeadWithoutGrouping) { check({3, 3, 64, 5, 20, 0}); }
TEST(Attention, SlidingWindowWithinATile) { check({4, 2, 8, 0, 30, 8}); }
TEST(Attention, SlidingWindowAcrossTiles) { check({4, 2, 8, 90, 60, 70}); }
TEST(Attention, SlidingWindowOfOne) { check({2, 1, 4, 10, 5, 1}); }
TEST(Attention, HeadDimOf128) { check({4, 2, 128, 60, 20, 0}); }
TEST(Attention, HeadDimNotAMultipleOfTheVectorWidth) { check({4, 2, 24, 30, 20, 0}); }
TEST(Attention, ManyQueriesPerKeyHead) { check({16, 2, 32, 3, 17, 0}); }

// Each task is one thread's alone, so the thread count changes nothing, to
// the bit.
TEST(Attention, SameResultOnOneThreadAndOnThree) {
  const int before = nuvec::lm::kernels::threads();
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512}) {
    if (!nuvec::lm::kernels::isa_allowed(isa)) continue;
    std::vector<std::vector<float>> outs;
    for (int t : {1, 3}) {
      nuvec::lm::kernels::set_threads(t);
      outs.push_back(check_with(isa, {4, 2, 16, 33, 40, 0}));
    }
    EXPECT_EQ(outs[0], outs[1]) << nuvec::lm::kernels::isa_name(isa);
  }
  nuvec::lm::kernels::set_threads(before);
}

// An f16 cache against an f32 one on the same keys and values: each stored
// element is off by at most 2^-11 of itself, so with keys and values ~ N(0, 1)
// an output (a weighted mean of values) moves by about 1e-4 to 1e-3 (8.2e-4
// measured at 200 positions); 5e-3 is the stated tolerance. A decode step, a chunk
// and a long prompt, on every instruction set (AMX falls back to AVX-512).
TEST(Attention, F16CacheWithinToleranceOfF32) {
  constexpr double kF16Bound = 5e-3;
  for (const Case& c : {Case{8, 2, 64, 300, 1, 0}, Case{4, 2, 64, 70, 37, 0}, Case{4, 1, 128, 0, 200, 0}}) {
    for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512, Isa::amx}) {
      if (!nuvec::lm::kernels::isa_allowed(isa)) continue;
      const double bound = isa == Isa::amx ? 0.04 : 2e-5;  // AMX's f32 path is bf16 (kTileBound below)
      const auto f32 = check_with(isa, c, false, bound);
      const auto f16 = check_with(isa, c, false, 2e-5, nuvec::lm::kernels::Precision::fast, KVCachePrecision::f16);
      double worst = 0;
      for (std::size_t i = 0; i < f32.size(); ++i) worst = std::max(worst, double{std::abs(f32[i] - f16[i])});
      EXPECT_LT(worst, isa == Isa::amx ? 0.04 + kF16Bound : kF16Bound) << nuvec::lm::kernels::isa_name(isa);
      EXPECT_GT(worst, 0.0) << "an f16 cache must round something";
    }
  }
}

// The cache's f32 -> f16 store (F16C on this CPU when it has AVX2) agrees
// bit for bit with the compiler's own conversion, element by element: ties
// to even, subnormals, overflow to infinity, and an odd tail past the last
// vector of 8.
TEST(HalfConvert, VectorStoreMatchesScalarConversion) {
  std::vector<float> x = random_floats(1000, 9);
  for (float& v : x) v *= 300.0f;  // some past f16's range (65504) once squared below
  for (std::size_t i = 0; i < 200; ++i) x[i] = x[i] * x[i];
  x.insert(x.end(), {1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65504.0f, 65520.0f, 1e-7f, -3e-6f, 0.0f, -0.0f,
                     std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), 1e30f});
  std::vector<std::uint16_t> got(x.size());
  nuvec::lm::half::from_f32(x.data(), got.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    _Float16 h = static_cast<_Float16>(x[i]);
    std::uint16_t want;
    std::memcpy(&want, &h, sizeof want);
    ASSERT_EQ(got[i], want) << "element " << i << " = " << x[i];
    if (std::isfinite(static_cast<float>(h))) {
      EXPECT_LE(std::abs(nuvec::lm::half::to_f32(got[i]) - x[i]), std::abs(x[i]) / 2048 + 6e-8f) << x[i];
    }
  }
  EXPECT_EQ(got[x.size() - 11], 0x3c00u);  // 1 + 2^-11: a tie, to even (1.0)
  EXPECT_EQ(got[x.size() - 10], 0x3c02u);  // 1 + 3·2^-11: a tie, to even (1 + 2^-9)
  EXPECT_EQ(got[x.size() - 8], 0x7c00u);   // 65520 rounds past the largest f16: infinity
}

// One layer, 2 query heads over 1 key-value head of 32: the smallest cache the refusals below take.
nuvec::lm::ModelConfig one_small_layer() {
  nuvec::lm::ModelConfig config;
  config.num_hidden_layers = 1;
  config.num_attention_heads = 2;
  config.num_key_value_heads = 1;
  config.head_dim = 32;
  return config;
}

// The software tiles take f32 caches only, and say so.
TEST(AttentionTiles, SoftwareTilesRefuseAnF16Cache) {
  auto device = nuvec::Device::create_cpu();
  const nuvec::lm::ModelConfig config = one_small_layer();
  const nuvec::lm::KVCache cache(*device, config, 8, attention::kKeys, KVCachePrecision::f16);
  const attention::Shape shape{2, 1, 32, 0};
  std::vector<float> q(64), out(64), scratch(attention::scratch_floats(shape) * 8);
  EXPECT_THROW(attention::attend_on_software_tiles(q.data(), 1, 0, cache, 0, shape, out.data(), scratch.data()),
               nuvec::InvalidArgument);
}

// A level the kernels may not use here (past this CPU, or past
// NUVEC_KERNEL_ISA) is refused before any of its code runs.
TEST(AttentionTiles, LevelsNotAllowedAreRefused) {
  if (nuvec::lm::kernels::isa_allowed(Isa::amx)) GTEST_SKIP() << "every level is allowed here: nothing to refuse";
  auto device = nuvec::Device::create_cpu();
  const nuvec::lm::ModelConfig config = one_small_layer();
  const nuvec::lm::KVCache cache(*device, config, 8, attention::kKeys, KVCachePrecision::f32);
  const attention::Shape shape{2, 1, 32, 0};
  std::vector<float> q(64), out(64), scratch(attention::scratch_floats(shape) * 8);
  EXPECT_THROW(attention::attend_with(Isa::amx, q.data(), 1, 0, cache, 0, shape, out.data(), scratch.data()),
               nuvec::InvalidArgument);
  if (!nuvec::lm::kernels::isa_allowed(Isa::avx512bf16)) {
    EXPECT_THROW(attention::attend_on_software_tiles(q.data(), 1, 0, cache, 0, shape, out.data(), scratch.data()),
                 nuvec::InvalidArgument);
  }
}

// The AMX path: q, keys, values and probabilities rounded to bf16 (relative
// error 2^-9 each), so outputs of this size (values ~ N(0, 1)) differ from the
// exact ones by some 1e-2 at worst; a wrong key, mask or tile is off by ~1.
// With software tiles on any CPU with AVX512_BF16, on the tile unit where
// there is one (attend_with(amx) takes it for 16 rows or more).
constexpr double kTileBound = 0.04;
void check_tiles(const Case& c) {
  if (nuvec::lm::kernels::isa_allowed(Isa::avx512bf16)) check_with(Isa::avx512bf16, c, true, kTileBound);
  if (nuvec::lm::kernels::isa_allowed(Isa::amx)) check_with(Isa::amx, c, false, kTileBound);
}
TEST(AttentionTiles, PrefillWithoutGroupingAcrossQueryAndKeyTiles) { check_tiles({4, 4, 64, 0, 150, 0}); }
TEST(AttentionTiles, ChunkAfterEarlierChunksGrouped) { check_tiles({8, 2, 64, 70, 37, 0}); }
TEST(AttentionTiles, SlidingWindowAcrossTiles) { check_tiles({4, 2, 32, 90, 60, 70}); }
TEST(AttentionTiles, HeadDimOf128) { check_tiles({4, 2, 128, 60, 20, 0}); }
TEST(AttentionTiles, ManyQueriesPerKeyHead) { check_tiles({16, 2, 32, 3, 17, 0}); }
TEST(AttentionTiles, OneRowOnSoftwareTiles) {
  if (!nuvec::lm::kernels::isa_allowed(Isa::avx512bf16)) GTEST_SKIP() << "the packing needs AVX512_BF16";
  check_with(Isa::avx512bf16, {4, 2, 32, 200, 1, 0}, true, kTileBound);
}
// A head dimension the tiles do not take (not a multiple of 32) keeps the
// f32 kernel, and its bound.
TEST(AttentionTiles, OtherHeadDimsStayF32) {
  if (!nuvec::lm::kernels::isa_allowed(Isa::avx512bf16)) GTEST_SKIP() << "the packing needs AVX512_BF16";
  check_with(Isa::avx512bf16, {4, 2, 24, 30, 20, 0}, true);
  if (nuvec::lm::kernels::isa_allowed(Isa::amx)) check_with(Isa::amx, {4, 2, 24, 30, 20, 0});
}
// Decode steps and exact numbers stay on the f32 kernel where there is AMX.
TEST(AttentionTiles, DecodeAndExactStayF32) {
  if (!nuvec::lm::kernels::isa_allowed(Isa::amx)) GTEST_SKIP() << "no AMX-BF16 here";
  check_with(Isa::amx, {8, 2, 64, 200, 1, 0});
  check_with(Isa::amx, {4, 4, 64, 0, 150, 0}, false, 2e-5, nuvec::lm::kernels::Precision::exact);
}

// Tiles bound the memory: scratch_floats() does not depend on the number of
// positions, and the same scratch serves a prompt of 2,000 positions as it
// does one of ten (check_with's guard: nothing is written past it).
TEST(Attention, ScratchDoesNotGrowWithThePrompt) {
  check({8, 2, 64, 0, 10, 0});
  check({8, 2, 64, 1990, 10, 0});
  check({8, 2, 64, 1960, 40, 500});
}

}  // namespace
