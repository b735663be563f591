// Greedy choice, seeded sampling, and nucleus (top-p) filtering.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "nuvec/error.h"
#include "nuvec/lm/sampler.h"

namespace {

using nuvec::lm::Sampler;
using nuvec::lm::SamplingOptions;

TEST(Sampler, GreedyTakesTheFirstLargest) {
  auto device = nuvec::Device::create_cpu();
  Sampler s(*device, 5);
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  EXPECT_EQ(s.sample(logits), 1);
  EXPECT_EQ(nuvec::lm::argmax(logits), 1);
  EXPECT_EQ(device->memory().active, 0u);  // greedy needs no scratch
}

TEST(Sampler, SameSeedSameTokensOtherSeedOtherTokens) {
  auto device = nuvec::Device::create_cpu();
  std::vector<float> logits(1000);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(double(i)) * 2);
  auto draw = [&](std::uint64_t seed) {
    Sampler s(*device, logits.size(), SamplingOptions{1.0f, 1.0f, seed});
    std::vector<int> tokens;
    for (int i = 0; i < 50; ++i) tokens.push_back(s.sample(logits));
    return tokens;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(Sampler, FrequenciesFollowTheSoftmaxAtTheTemperature) {
  auto device = nuvec::Device::create_cpu();
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f};
  Sampler s(*device, 3, SamplingOptions{2.0f, 1.0f, 42});
  std::vector<int> counts(3);
  const int n = 30000;
  for (int i = 0; i < n; ++i) ++counts[static_cast<std::size_t>(s.sample(logits))];
  const double z = 1 + std::exp(0.5) + std::exp(1.0);
  const double expected[] = {1 / z, std::exp(0.5) / z, std::exp(1.0) / z};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(counts[static_cast<std::size_t>(i)] / double(n), expected[i], 0.015);
}

TEST(Sampler, TopPKeepsOnlyTheNucleus) {
  auto device = nuvec::Device::create_cpu();
  // Probabilities about 0.6, 0.3, then 500 tokens sharing 0.1.
  std::vector<float> logits(502, std::log(0.1f / 500));
  logits[300] = std::log(0.6f);
  logits[17] = std::log(0.3f);
  Sampler s(*device, logits.size(), SamplingOptions{1.0f, 0.85f, 3});
  std::map<int, int> seen;
  for (int i = 0; i < 2000; ++i) ++seen[s.sample(logits)];
  // 0.6 + 0.3 reaches 0.85: the tail is cut, and the two left share the draws 2:1.
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_NEAR(seen[300] / 2000.0, 2.0 / 3, 0.04);
  EXPECT_NEAR(seen[17] / 2000.0, 1.0 / 3, 0.04);

  // A nucleus larger than the first guess (64) still comes out right.
  std::vector<float> flat(5000, 0.0f);
  Sampler wide(*device, flat.size(), SamplingOptions{1.0f, 0.5f, 4});
  std::map<int, int> spread;
  for (int i = 0; i < 5000; ++i) ++spread[wide.sample(flat)];
  // Ties break by id: the nucleus is the first ~2500 ids (float sums may need one more).
  for (const auto& [token, count] : spread) EXPECT_LE(token, 2501);
  EXPECT_GT(spread.size(), 1000u);
}

TEST(Sampler, RefusesBadOptionsAndLengths) {
  auto device = nuvec::Device::create_cpu();
  EXPECT_THROW(Sampler(*device, 10, SamplingOptions{-1.0f, 1.0f, 0}), nuvec::InvalidArgument);
  EXPECT_THROW(Sampler(*device, 10, SamplingOptions{NAN, 1.0f, 0}), nuvec::InvalidArgument);
  EXPECT_THROW(Sampler(*device, 10, SamplingOptions{1.0f, 0.0f, 0}), nuvec::InvalidArgument);
  EXPECT_THROW(Sampler(*device, 10, SamplingOptions{1.0f, 1.5f, 0}), nuvec::InvalidArgument);
  Sampler s(*device, 10);
  const std::vector<float> short_logits(9);
  EXPECT_THROW(s.sample(short_logits), nuvec::InvalidArgument);
}

}  // namespace
