// The free functions: page_size, physical_memory, allocation_size,
// mapping_size, parse_size.
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
// Free functions.

std::size_t mem_total_from_proc() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::size_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return 0;
}

TEST(MemoryFunctions, PageSize) {
  EXPECT_EQ(nuvec::page_size(), static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
}

TEST(MemoryFunctions, PhysicalMemoryIsAtMostMemTotal) {
  const std::size_t total = mem_total_from_proc();
  ASSERT_GT(total, 0u);
  EXPECT_GT(nuvec::physical_memory(), 0u);
  EXPECT_LE(nuvec::physical_memory(), total);
}

TEST(MemoryFunctions, AllocationSize) {
  const std::size_t page = nuvec::page_size();
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(nuvec::allocation_size(0), 0u);
  EXPECT_EQ(nuvec::allocation_size(1), 256u);
  EXPECT_EQ(nuvec::allocation_size(256), 256u);
  EXPECT_EQ(nuvec::allocation_size(257), 512u);
  EXPECT_EQ(nuvec::allocation_size(1000), 1024u);
  EXPECT_EQ(nuvec::allocation_size(page - 1), page);
  EXPECT_EQ(nuvec::allocation_size(page), page);
  EXPECT_EQ(nuvec::allocation_size(page + 1), 2 * page);
  EXPECT_EQ(nuvec::allocation_size(5 * page), 5 * page);
  EXPECT_EQ(nuvec::allocation_size(max - 2 * page), max - 2 * page + 1);
  EXPECT_EQ(nuvec::allocation_size(max - page + 1), max - page + 1);
  EXPECT_EQ(nuvec::allocation_size(max - page + 2), std::nullopt);
  EXPECT_EQ(nuvec::allocation_size(max), std::nullopt);
}

TEST(MemoryFunctions, MappingSize) {
  const std::size_t page = nuvec::page_size();
  EXPECT_EQ(nuvec::mapping_size(0), 0u);
  EXPECT_EQ(nuvec::mapping_size(1), page);
  EXPECT_EQ(nuvec::mapping_size(page), page);
  EXPECT_EQ(nuvec::mapping_size(page + 1), 2 * page);
  EXPECT_EQ(nuvec::mapping_size(10 * page + 17), 11 * page);
  EXPECT_THROW(nuvec::mapping_size(std::numeric_limits<std::uint64_t>::max()),
               nuvec::InvalidArgument);
}

TEST(MemoryFunctions, ParseSizeAcceptsWhatUsersWrite) {
  constexpr std::size_t GiB = std::size_t{1} << 30;
  EXPECT_EQ(nuvec::parse_size("8GiB"), 8 * GiB);
  EXPECT_EQ(nuvec::parse_size("512MiB"), 512 * kMiB);
  EXPECT_EQ(nuvec::parse_size("1.5GB"), 1500000000u);
  EXPECT_EQ(nuvec::parse_size("4096"), 4096u);
  EXPECT_EQ(nuvec::parse_size("64K"), 65536u);
  EXPECT_EQ(nuvec::parse_size("2G"), 2 * GiB);
  EXPECT_EQ(nuvec::parse_size("300MB"), 300000000u);
  EXPECT_EQ(nuvec::parse_size("1 GiB"), GiB);
  EXPECT_EQ(nuvec::parse_size("8gib"), 8 * GiB);
  EXPECT_EQ(nuvec::parse_size("0"), 0u);
}

TEST(MemoryFunctions, ParseSizeRejectsMalformedNamingTheVariable) {
  for (const char* text : {"", "abc", "-1", "1.5.5GB", "12XB", "GiB", "18446744073709551616",
                           "16EiB", "17179869184GiB", "99999999999GiB", "1..5G", ".", "5 GiB B"}) {
    try {
      nuvec::parse_size(text, "NUVEC_SOME_LIMIT");
      ADD_FAILURE() << "'" << text << "' was accepted";
    } catch (const nuvec::InvalidArgument& e) {
      EXPECT_TRUE(contains(e.what(), "NUVEC_SOME_LIMIT")) << "'" << text << "': " << e.what();
    }
  }
}

}  // namespace
