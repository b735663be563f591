// NUVEC_* environment overrides, read when a device is created.
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
// Environment overrides, read by create_cpu() (and cpu()).

struct CleanEnvironment {
  ScopedEnv memory{"NUVEC_MEMORY_LIMIT", nullptr};
  ScopedEnv cache{"NUVEC_CACHE_LIMIT", nullptr};
  ScopedEnv wired{"NUVEC_WIRED_LIMIT", nullptr};
  ScopedEnv memory_cpu{"NUVEC_MEMORY_LIMIT_CPU", nullptr};
  ScopedEnv cache_cpu{"NUVEC_CACHE_LIMIT_CPU", nullptr};
  ScopedEnv wired_cpu{"NUVEC_WIRED_LIMIT_CPU", nullptr};
};

TEST(Environment, OverridesTheLimits) {
  CleanEnvironment clean;
  ScopedEnv memory("NUVEC_MEMORY_LIMIT", "512MiB");
  ScopedEnv cache("NUVEC_CACHE_LIMIT", "64MiB");
  ScopedEnv wired("NUVEC_WIRED_LIMIT", "1MiB");
  const MemoryStats s = nuvec::Device::create_cpu()->memory();
  EXPECT_EQ(s.memory_limit, 512 * kMiB);
  EXPECT_EQ(s.cache_limit, 64 * kMiB);
  EXPECT_EQ(s.wired_limit, kMiB);
}

TEST(Environment, MemoryLimitAloneAlsoLowersTheCacheLimit) {
  CleanEnvironment clean;
  ScopedEnv memory("NUVEC_MEMORY_LIMIT", "1.5GB");
  const MemoryStats s = nuvec::Device::create_cpu()->memory();
  EXPECT_EQ(s.memory_limit, 1500000000u);
  EXPECT_EQ(s.cache_limit, 1500000000u);
  EXPECT_EQ(s.wired_limit, 0u);
}

TEST(Environment, CacheLimitAloneKeepsTheMemoryDefault) {
  CleanEnvironment clean;
  ScopedEnv cache("NUVEC_CACHE_LIMIT", "4096");
  const MemoryStats s = nuvec::Device::create_cpu()->memory();
  EXPECT_EQ(s.memory_limit, nuvec::physical_memory());
  EXPECT_EQ(s.cache_limit, 4096u);
}

TEST(Environment, NoVariablesMeansDefaults) {
  CleanEnvironment clean;
  const MemoryStats s = nuvec::Device::create_cpu()->memory();
  EXPECT_EQ(s.memory_limit, nuvec::physical_memory());
  EXPECT_EQ(s.cache_limit, s.memory_limit);
  EXPECT_EQ(s.wired_limit, 0u);
}

TEST(Environment, IgnoredWithoutReadEnvironment) {
  CleanEnvironment clean;
  ScopedEnv memory("NUVEC_MEMORY_LIMIT", "512MiB");
  ScopedEnv wired("NUVEC_WIRED_LIMIT", "junk");
  nuvec::Device dev(nuvec::cpu::make_backend(), /*read_environment=*/false);
  EXPECT_EQ(dev.memory().memory_limit, nuvec::physical_memory());
  EXPECT_EQ(dev.memory().wired_limit, 0u);
}

TEST(Environment, WiredLimitAboveWhatMayBeLockedIsInvalid) {
  CleanEnvironment clean;
  const std::string too_much = std::to_string(nuvec::physical_memory() + 1);
  ScopedEnv wired("NUVEC_WIRED_LIMIT", too_much.c_str());
  try {
    nuvec::Device::create_cpu();
    ADD_FAILURE() << "NUVEC_WIRED_LIMIT=" << too_much << " was accepted";
  } catch (const nuvec::InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "NUVEC_WIRED_LIMIT")) << e.what();
  }
}

TEST(Environment, ProcessWideCpuDeviceIsOne) {
  nuvec::Device& cpu = nuvec::Device::cpu();
  EXPECT_EQ(&cpu, &nuvec::Device::cpu());
  EXPECT_EQ(cpu.name(), "cpu");
  EXPECT_EQ(nuvec::Device::create_cpu()->name(), "cpu");
}

// The per-device forms win for their device: _CPU for CPU devices, _CUDA<n>
// for GPU n (whose devices this machine may not have: they leave the CPU's
// limits alone).
TEST(Environment, PerDeviceFormsWinForTheirDevice) {
  CleanEnvironment clean;
  ScopedEnv memory("NUVEC_MEMORY_LIMIT", "1GiB");
  ScopedEnv memory_cpu("NUVEC_MEMORY_LIMIT_CPU", "512MiB");
  ScopedEnv wired_cpu("NUVEC_WIRED_LIMIT_CPU", "2MiB");
  ScopedEnv memory_gpu("NUVEC_MEMORY_LIMIT_CUDA0", "64MiB");
  ScopedEnv cache_gpu("NUVEC_CACHE_LIMIT_CUDA12", "1MiB");
  const MemoryStats s = nuvec::Device::create_cpu()->memory();
  EXPECT_EQ(s.memory_limit, 512 * kMiB);
  EXPECT_EQ(s.cache_limit, 512 * kMiB) << "the cache limit follows the memory limit the device read";
  EXPECT_EQ(s.wired_limit, 2 * kMiB);
  ScopedEnv unset_cpu("NUVEC_MEMORY_LIMIT_CPU", nullptr);
  EXPECT_EQ(nuvec::Device::create_cpu()->memory().memory_limit, 1024 * kMiB) << "NUVEC_MEMORY_LIMIT again";
}

TEST(Environment, PerDeviceFormOfAnUnknownDeviceIsInvalidArgument) {
  for (const char* name : {"NUVEC_MEMORY_LIMIT_GPU1", "NUVEC_CACHE_LIMIT_CUDA", "NUVEC_WIRED_LIMIT_cpu",
                           "NUVEC_MEMORY_LIMIT_CUDA1X", "NUVEC_MEMORY_LIMIT_"}) {
    CleanEnvironment clean;
    ScopedEnv bad(name, "1GiB");
    try {
      nuvec::Device::create_cpu();
      ADD_FAILURE() << name << " was accepted";
    } catch (const nuvec::InvalidArgument& e) {
      EXPECT_TRUE(contains(e.what(), name)) << e.what();
      EXPECT_TRUE(contains(e.what(), "_CUDA<ordinal>")) << e.what();
    }
  }
}

TEST(Environment, MalformedValueIsInvalidArgumentNamingTheVariable) {
  for (const char* name : {"NUVEC_MEMORY_LIMIT", "NUVEC_CACHE_LIMIT", "NUVEC_WIRED_LIMIT", "NUVEC_MEMORY_LIMIT_CPU",
                           "NUVEC_WIRED_LIMIT_CPU"}) {
    for (const char* value : {"abc", "-1", "12XB", "1.5.5GB", "99999999999GiB"}) {
      CleanEnvironment clean;
      ScopedEnv bad(name, value);
      try {
        nuvec::Device::create_cpu();
        ADD_FAILURE() << name << "='" << value << "' was accepted";
      } catch (const nuvec::InvalidArgument& e) {
        EXPECT_TRUE(contains(e.what(), name)) << name << "='" << value << "': " << e.what();
      }
    }
  }
}

}  // namespace
