// MemoryStats as a value: equality, printing, JSON.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/memory_stats_json.h"
#include "nuvec/nuvec.h"
#include "support/scoped_env.h"
#include "support/text.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"

namespace {

using nuvec::MemoryStats;
using nuvec_test::ScopedEnv;
using nuvec_test::TempFile;

using nuvec_test::contains;
using nuvec_test::kMiB;


// ---------------------------------------------------------------------------
// MemoryStats, the value.

constexpr const char* kFieldNames[] = {
    "active",       "peak",        "active_with_mapped", "peak_with_mapped",
    "cache",        "memory_limit", "cache_limit",       "system_allocations",
    "wired_limit",  "wired",       "mapped",             "wired_mapped"};

// A value with every field different.
MemoryStats distinct_stats() {
  MemoryStats s;
  s.active = 1024;
  s.peak = 2048;
  s.active_with_mapped = 5120;
  s.peak_with_mapped = 6144;
  s.cache = 512;
  s.memory_limit = std::size_t{8} << 30;
  s.cache_limit = std::size_t{1} << 30;
  s.system_allocations = 7;
  s.wired_limit = 1 << 20;
  s.wired = 4096;
  s.mapped = 4096 + 8192 - 4096;
  s.wired_mapped = 3;
  return s;
}

TEST(MemoryStatsValue, EqualityComparesEveryField) {
  const MemoryStats s = distinct_stats();
  EXPECT_EQ(s, distinct_stats());
  MemoryStats t;
  int fields = 0;
  nuvec::for_each_field(t, [&](const char*, std::uint64_t) { ++fields; });
  EXPECT_EQ(fields, 12);
  using Field = std::size_t MemoryStats::*;
  for (Field field : {&MemoryStats::active, &MemoryStats::peak, &MemoryStats::active_with_mapped,
                      &MemoryStats::peak_with_mapped, &MemoryStats::cache,
                      &MemoryStats::memory_limit, &MemoryStats::cache_limit,
                      &MemoryStats::wired_limit, &MemoryStats::wired, &MemoryStats::mapped,
                      &MemoryStats::wired_mapped}) {
    MemoryStats u = s;
    u.*field += 1;
    EXPECT_NE(u, s);
  }
  MemoryStats u = s;
  u.system_allocations += 1;
  EXPECT_NE(u, s);
}

TEST(MemoryStatsValue, PrintsEveryFieldInOrder) {
  const MemoryStats s = distinct_stats();
  std::ostringstream os;
  os << s;
  const std::string text = os.str();
  EXPECT_EQ(text.rfind("MemoryStats{", 0), 0u) << text;
  std::size_t at = 0;
  std::vector<std::string> expected;
  nuvec::for_each_field(s, [&](const char* name, std::uint64_t value) {
    expected.push_back(fmt::format("{}={}", name, value));
  });
  ASSERT_EQ(expected.size(), 12u);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(contains(expected[i], std::string(kFieldNames[i]) + "=")) << expected[i];
    const std::size_t found = text.find(expected[i], at);
    ASSERT_NE(found, std::string::npos) << expected[i] << " in " << text;
    at = found + expected[i].size();
  }
  EXPECT_EQ(fmt::format("{}", s), text);
}

TEST(MemoryStatsValue, JsonStringHasTheTwelveFieldsInOrder) {
  const MemoryStats s = distinct_stats();
  const auto parsed = nlohmann::ordered_json::parse(nuvec::to_json(s));
  ASSERT_TRUE(parsed.is_object());
  std::vector<std::string> keys;
  for (const auto& [key, value] : parsed.items()) keys.push_back(key);
  EXPECT_EQ(keys, std::vector<std::string>(std::begin(kFieldNames), std::end(kFieldNames)));
  nuvec::for_each_field(s, [&](const char* name, std::uint64_t value) {
    ASSERT_TRUE(parsed[name].is_number_integer()) << name;
    EXPECT_EQ(parsed[name].get<std::uint64_t>(), value) << name;
  });
}

TEST(MemoryStatsValue, NlohmannRoundTrip) {
  const MemoryStats s = distinct_stats();
  const nlohmann::json j = s;
  ASSERT_EQ(j.size(), 12u);
  for (const char* name : kFieldNames) EXPECT_TRUE(j.contains(name)) << name;
  EXPECT_EQ(j.get<MemoryStats>(), s);
  EXPECT_EQ(nlohmann::json::parse(nuvec::to_json(s)), j);
  EXPECT_EQ(nlohmann::json::parse(nuvec::to_json(s)).get<MemoryStats>(), s);

  nlohmann::json missing = j;
  missing.erase("wired_mapped");
  EXPECT_THROW(missing.get<MemoryStats>(), nlohmann::json::exception);
  nlohmann::json wrong = j;
  wrong["cache"] = "a lot";
  EXPECT_THROW(wrong.get<MemoryStats>(), nlohmann::json::type_error);
}

}  // namespace
