// Sessions: chunked prefill, decode, the KV cache, and the memory contract
// (buffers from the device, reused; no system allocations in steady decode).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "lm_test_support.h"
#include "nuvec/error.h"
#include "nuvec/lm/model.h"
#include "nuvec/lm/sampler.h"
#include "nuvec/lm/session.h"
#include "nuvec/memory.h"

namespace {

using nuvec::lm::Session;
using nuvec::lm::SessionOptions;

SessionOptions with_context(std::size_t context) {
  SessionOptions o;
  o.context = context;
  return o;
}

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nuvec::lm::write_demo_model(dir_.path(), nuvec_test::tiny_model());
    model_ = std::make_unique<nuvec::lm::Model>(nuvec::lm::load_model(*device_, dir_.path()));
    for (int i = 0; i < 100; ++i) prompt_.push_back((i * 37 + 5) % 128);
  }

  // Every position's logits for `tokens`, prefilled `chunk` at a time.
  std::vector<std::vector<float>> all_logits(std::span<const std::int32_t> tokens, std::size_t chunk) {
    SessionOptions o;
    o.context = 200;
    o.prefill_chunk = chunk;
    Session s(*device_, *model_, o);
    std::vector<std::vector<float>> rows;
    s.prefill(tokens, [&](std::size_t position, std::span<const float> logits) {
      EXPECT_EQ(position, rows.size());
      rows.emplace_back(logits.begin(), logits.end());
    });
    return rows;
  }

  nuvec_test::TempDir dir_;
  std::unique_ptr<nuvec::Device> device_ = nuvec::Device::create_cpu();
  std::unique_ptr<nuvec::lm::Model> model_;
  std::vector<std::int32_t> prompt_;
};

double max_diff(std::span<const float> a, std::span<const float> b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::abs(a[i] - b[i])));
  return d;
}

TEST_F(SessionTest, ChunkedPrefillMatchesOneChunk) {
  const auto whole = all_logits(prompt_, 512);
  ASSERT_EQ(whole.size(), prompt_.size());  // one row of logits per position
  for (std::size_t chunk : {1, 7, 16, 64}) {
    const auto chunked = all_logits(prompt_, chunk);
    ASSERT_EQ(chunked.size(), whole.size());
    for (std::size_t p = 0; p < whole.size(); ++p) {
      ASSERT_LT(max_diff(chunked[p], whole[p]), 1e-4) << "chunk " << chunk << " position " << p;
    }
  }
}

TEST_F(SessionTest, DecodeStepsMatchPrefillOfTheWholeSequence) {
  const std::span<const std::int32_t> head(prompt_.data(), 60), tail(prompt_.data() + 60, 40);
  const auto reference = all_logits(prompt_, 512);
  ASSERT_EQ(reference.size(), prompt_.size());
  Session s(*device_, *model_, with_context(100));
  auto last = s.prefill(head);
  EXPECT_LT(max_diff(last, reference[59]), 1e-4);
  for (std::size_t i = 0; i < tail.size(); ++i) {
    last = s.decode(tail[i]);
    ASSERT_LT(max_diff(last, reference[60 + i]), 1e-4) << i;
  }
  EXPECT_EQ(s.position(), 100u);
  EXPECT_THROW(s.decode(1), nuvec::InvalidArgument);  // the context is full
  s.clear();
  EXPECT_LT(max_diff(s.prefill(head), reference[59]), 1e-4);  // the cache is reused from the start
}

// rewind forgets what came after a position: the steps taken again from
// there give the logits they gave the first time, and a position past the
// held ones is refused, leaving the session as it was.
TEST_F(SessionTest, RewindTakesTheStepsAgainFromThePosition) {
  const std::span<const std::int32_t> head(prompt_.data(), 60);
  Session s(*device_, *model_, with_context(100));
  s.prefill(head);
  const auto first = s.decode(7);
  const std::vector<float> want(first.begin(), first.end());
  s.decode(9);
  s.decode(11);
  EXPECT_THROW(s.rewind(64), nuvec::InvalidArgument);
  EXPECT_EQ(s.position(), 63u);
  s.rewind(60);
  EXPECT_EQ(s.position(), 60u);
  const auto again = s.decode(7);
  EXPECT_EQ(std::vector<float>(again.begin(), again.end()), want);
}

// system_allocations counts cache misses: a steady loop makes none.
TEST_F(SessionTest, SteadyStateDecodeMakesNoSystemAllocations) {
  Session s(*device_, *model_, with_context(150));
  nuvec::lm::Sampler sampler(*device_, 128, {.temperature = 0.8f, .top_p = 0.9f, .seed = 1});
  std::int32_t token = sampler.sample(s.prefill(prompt_));
  s.release_activations();  // decode takes its own one-row buffers on its first step
  token = sampler.sample(s.decode(token));
  const auto after_first = device_->memory();
  for (int i = 0; i < 40; ++i) token = sampler.sample(s.decode(token));
  const auto after = device_->memory();
  EXPECT_EQ(after.system_allocations, after_first.system_allocations);
  EXPECT_EQ(after.active, after_first.active);
}

TEST_F(SessionTest, EverythingComesFromTheDeviceAndActivationsAreBoundedByTheChunk) {
  const auto before = device_->memory();
  SessionOptions o;
  o.context = 150;
  o.prefill_chunk = 16;
  o.kv_cache = nuvec::lm::KVCachePrecision::f32;
  Session s(*device_, *model_, o);
  EXPECT_EQ(s.kv_cache_bytes(), 2u * 2 * 8 * (192 + 150) * 4);  // layers, kv heads, head_dim, positions (keys padded to tiles of 64)
  const auto made = device_->memory();
  EXPECT_GE(made.active - before.active, s.kv_cache_bytes());
  device_->reset_peak();
  s.prefill(prompt_);  // 100 tokens, 16 at a time
  const auto plan = s.activation_plan(16);
  const auto after = device_->memory();
  EXPECT_EQ(after.active - made.active, plan.total_bytes);
  EXPECT_EQ(after.peak - made.active, plan.total_bytes);  // never more than one chunk's buffers
  EXPECT_GT(plan.largest_bytes, 0u);
  EXPECT_LT(plan.largest_bytes, plan.total_bytes);
  s.release_activations();
  EXPECT_EQ(device_->memory().active, made.active);
}

// An f16 cache takes exactly half the bytes of an f32 one, and the device's
// statistics (what the floor and every report read) see exactly that: the
// two sessions differ by the two buffers' sizes and nothing else.
TEST_F(SessionTest, F16CacheHalvesTheCacheAndTheStatisticsFollow) {
  using nuvec::lm::KVCachePrecision;
  std::size_t taken[2] = {}, cache_bytes[2] = {};
  for (const KVCachePrecision kv : {KVCachePrecision::f32, KVCachePrecision::f16}) {
    const auto before = device_->memory();
    SessionOptions o;
    o.context = 150;
    o.kv_cache = kv;
    Session s(*device_, *model_, o);
    const auto made = device_->memory();
    const int i = kv == KVCachePrecision::f16;
    taken[i] = made.active - before.active;
    cache_bytes[i] = s.kv_cache_bytes();
    const std::size_t element = nuvec::lm::kv_cache_element_bytes(kv);
    // layers, kv heads, head_dim, positions (keys padded to tiles of 64)
    EXPECT_EQ(s.kv_cache_bytes(), 2u * 2 * 8 * (192 + 150) * element);
    s.prefill(prompt_);
    s.release_activations();
    EXPECT_EQ(device_->memory().active, made.active);
  }
  EXPECT_EQ(cache_bytes[1] * 2, cache_bytes[0]);
  const auto buffers = [](std::size_t element) {
    return nuvec::allocation_size(2 * 2 * 8 * 192 * element).value() +
           nuvec::allocation_size(2 * 2 * 8 * 150 * element).value();
  };
  EXPECT_EQ(taken[0] - taken[1], buffers(4) - buffers(2));
  EXPECT_EQ(nuvec::lm::kv_cache_precision_name(KVCachePrecision::f16), "f16");
}

// With an f16 cache, greedy decoding picks the same tokens as with f32 on a
// short run, and every step's logits stay within a stated tolerance: the
// stored keys and values are off by at most 2^-11 of themselves, which moves
// this model's logits (of size ~1) by about 1e-3 (9.9e-4 measured); 1e-2 is
// the bound.
TEST_F(SessionTest, F16CacheDecodesTheSameGreedyTokens) {
  using nuvec::lm::KVCachePrecision;
  std::vector<std::int32_t> tokens[2];
  std::vector<std::vector<float>> logits[2];
  for (const KVCachePrecision kv : {KVCachePrecision::f32, KVCachePrecision::f16}) {
    const int i = kv == KVCachePrecision::f16;
    SessionOptions o;
    o.context = 130;
    o.kv_cache = kv;
    Session s(*device_, *model_, o);
    auto last = s.prefill(std::span<const std::int32_t>(prompt_.data(), 90));
    for (int step = 0; step < 30; ++step) {
      logits[i].emplace_back(last.begin(), last.end());
      const auto token = static_cast<std::int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
      tokens[i].push_back(token);
      last = s.decode(token);
    }
  }
  EXPECT_EQ(tokens[0], tokens[1]);
  double worst = 0;
  for (std::size_t step = 0; step < logits[0].size(); ++step) {
    worst = std::max(worst, max_diff(logits[0][step], logits[1][step]));
  }
  EXPECT_LT(worst, 1e-2);
  EXPECT_GT(worst, 0.0) << "the f16 cache must have rounded something";
}

TEST_F(SessionTest, RefusesWhatDoesNotFit) {
  EXPECT_THROW(Session(*device_, *model_, with_context(257)), nuvec::InvalidArgument);
  SessionOptions zero_chunk;
  zero_chunk.prefill_chunk = 0;
  EXPECT_THROW(Session(*device_, *model_, zero_chunk), nuvec::InvalidArgument);
  Session s(*device_, *model_, with_context(50));
  EXPECT_THROW(s.prefill(prompt_), nuvec::InvalidArgument);  // 100 tokens, 50 positions
  EXPECT_EQ(s.position(), 0u);
  const std::vector<std::int32_t> out_of_vocab = {1, 2, 128};
  EXPECT_THROW(s.prefill(out_of_vocab), nuvec::InvalidArgument);
  EXPECT_EQ(s.position(), 0u);
  EXPECT_THROW(s.prefill({}), nuvec::InvalidArgument);
}

TEST_F(SessionTest, KvCachePastTheMemoryLimitIsOutOfMemory) {
  const auto stats = device_->memory();
  device_->set_memory_limit(stats.active + stats.mapped + 4096);
  EXPECT_THROW(Session(*device_, *model_, with_context(256)), nuvec::OutOfMemory);
  EXPECT_EQ(device_->memory().active, stats.active);
}

TEST_F(SessionTest, ProgressIsReportedPerChunk) {
  SessionOptions o;
  o.context = 128;
  o.prefill_chunk = 32;
  std::vector<std::size_t> seen;
  o.progress = [&](std::size_t done, std::size_t total) {
    EXPECT_EQ(total, 100u);
    seen.push_back(done);
  };
  Session s(*device_, *model_, o);
  s.prefill(prompt_);
  EXPECT_EQ(seen, (std::vector<std::size_t>{32, 64, 96, 100}));
}

}  // namespace
