// A long random walk over a real CPU device, checked after every step against
// ReferenceModel (docs/allocator-policy.md): every MemoryStats field, where
// every buffer lands (which cached extent or hole serves it), what the device
// holds from the system and what it gave back.
//
// Two walks: the arena (the CPU's policy), with small reservations so that
// the walk spans many; and whole blocks (the policy of a backend that cannot
// reserve), on the CPU backend without reservations.
//
// NUVEC_PROPERTY_SEED picks the walk (default below), NUVEC_PROPERTY_OPS its
// length (default 10^6; the blocks walk takes a fifth of it). A failure names
// the seed and the step, and lists the operations just before it.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/nuvec.h"
#include "support/counting_system_calls.h"
#include "support/reference_model.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"

namespace {

using nuvec_test::CountingSystemCalls;
using nuvec_test::ReferenceModel;
using nuvec_test::TempFile;

constexpr std::uint64_t kDefaultSeed = 20240611;
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kMaxLiveBuffers = 256;
constexpr std::size_t kMaxLiveMappings = 8;
// Wired limits stay under the default RLIMIT_MEMLOCK (8 MiB), so the walk
// also runs where the process may not lock more.
constexpr std::size_t kMaxWiredLimit = 2 * kMiB;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  return text && *text ? std::strtoull(text, nullptr, 0) : fallback;
}

using Policy = ReferenceModel::Policy;

// Arena reservations of 256 KiB: the walk's larger buffers (up to 260 pages) get
// reservations of their own size, and extents meet reservation boundaries.
constexpr std::size_t kWalkReservation = 256 * 1024;

class Walk {
 public:
  Walk(std::uint64_t seed, Policy policy)
      : seed_(seed),
        policy_(policy),
        rng_(seed),
        page_(nuvec::page_size()),
        calls_(std::make_shared<CountingSystemCalls>()),
        device_(std::make_unique<nuvec::Device>(
            nuvec::cpu::make_backend(calls_, {.reservations = policy == Policy::arena,
                                              .reservation_bytes = kWalkReservation}),
            false)),
        model_(page_, device_->memory(), {.policy = policy, .reservation_bytes = kWalkReservation, .readings = {}}) {
    const std::array<std::size_t, 7> sizes = {
        0, 1, page_ - 1, page_, 3 * page_ + 7, 17 * page_ + 100, 260 * page_ + 1};
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      files_.push_back(std::make_unique<TempFile>(sizes[i], seed ^ (i * 0x9e3779b97f4a7c15ull)));
    }
  }

  ~Walk() {
    live_.clear();
    mappings_.clear();
    device_.reset();
  }

  // Runs `ops` steps; stops at the first failure.
  void run(std::uint64_t ops) {
    if (!start()) return;
    for (step_ = 1; step_ <= ops; ++step_) {
      if (!one_step() || !check()) return;
    }
    // Everything goes back; the books must balance.
    live_.clear();
    mappings_.clear();
    device_->clear_cache();
    const nuvec::MemoryStats end = device_->memory();
    EXPECT_EQ(end.active, 0u);
    EXPECT_EQ(end.cache, 0u);
    EXPECT_EQ(end.mapped, 0u);
    EXPECT_EQ(end.wired, 0u);
    device_.reset();
    const CountingSystemCalls::Totals t = calls_->totals();
    EXPECT_EQ(t.blocks, 0u);
    EXPECT_EQ(t.file_maps, 0u);
    EXPECT_EQ(t.open_fds, 0u);
    EXPECT_EQ(t.locked_bytes, 0u);
    EXPECT_EQ(t.unknown_releases, 0u);
    RecordProperty("hits", std::to_string(hits_));
    RecordProperty("misses", std::to_string(misses_));
    RecordProperty("system_allocations", std::to_string(system_));
    RecordProperty("refusals", std::to_string(refusals_));
    std::printf("seed %llu: %llu steps, %zu hits, %zu misses (%zu system allocations), %zu refusals, %zu invalid, "
                "%zu bytes decommitted\n",
                static_cast<unsigned long long>(seed_), static_cast<unsigned long long>(ops), hits_,
                misses_ + system_, system_, refusals_, invalid_, t.decommitted_bytes);
  }

 private:
  struct LiveBuffer {
    nuvec::Buffer buffer;
    std::uintptr_t key;
    std::byte tag;
  };
  struct LiveMapping {
    nuvec::MappedFile file;
    std::shared_ptr<const nuvec::Mapping> view;  // a second owner, or null
    std::uintptr_t id;
  };

  static void RecordProperty(const std::string& key, const std::string& value) {
    ::testing::Test::RecordProperty(key, value);
  }

  std::size_t uniform(std::size_t lo, std::size_t hi) {  // inclusive
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng_);
  }
  bool chance(unsigned percent) { return uniform(0, 99) < percent; }

  void note(std::string what) {
    history_.push_back(fmt::format("{}: {}", step_, what));
    if (history_.size() > 24) history_.pop_front();
  }

  bool fail(const std::string& what, int line) {
    std::string history;
    for (const std::string& h : history_) history += "  " + h + "\n";
    ADD_FAILURE_AT(__FILE__, line) << "seed " << seed_ << " step " << step_ << ": " << what
                                   << "\n device " << device_->memory() << "\n model  "
                                   << model_.stats() << "\n last operations:\n"
                                   << history;
    return false;
  }

#define WALK_EXPECT(cond) \
  do {                    \
    if (!(cond)) return fail(#cond, __LINE__); \
  } while (0)
#define WALK_EXPECT_EQ(a, b)                                                              \
  do {                                                                                    \
    const auto va_ = (a);                                                                 \
    const auto vb_ = (b);                                                                 \
    if (!(va_ == vb_)) return fail(fmt::format("{} == {}: {} vs {}", #a, #b, va_, vb_), __LINE__); \
  } while (0)

  // Limits that make refusals, yields and waiting items common.
  bool start() {
    step_ = 0;
    const std::size_t memory_limit = 16 * kMiB, cache_limit = 8 * kMiB, wired_limit = kMiB;
    auto m = model_.set_memory_limit(memory_limit);
    WALK_EXPECT_EQ(device_->set_memory_limit(memory_limit), *m);
    WALK_EXPECT_EQ(device_->set_cache_limit(cache_limit), model_.set_cache_limit(cache_limit));
    auto w = model_.set_wired_limit(wired_limit, SIZE_MAX);
    WALK_EXPECT_EQ(device_->set_wired_limit(wired_limit), *w);
    return check();
  }

  bool one_step() {
    const std::size_t r = uniform(0, 999);
    if (r < 340) return allocate();
    if (r < 640) return free_one();
    if (r < 700) return map_one();
    if (r < 760) return unmap_one();
    if (r < 800) return set_memory_limit();
    if (r < 840) return set_cache_limit();
    if (r < 880) return set_wired_limit();
    if (r < 900) {
      note("reset_peak");
      device_->reset_peak();
      model_.reset_peak();
      return true;
    }
    if (r < 910) {
      note("clear_cache");
      device_->clear_cache();
      model_.clear_cache();
      return true;
    }
    return free_one();
  }

  std::size_t pick_length() {
    const std::size_t r = uniform(0, 99);
    if (r < 2) return 0;
    if (r < 42) {
      const std::array<std::size_t, 10> popular = {
          1, 100, 256, 1000, 2048, page_, page_ + 1, 3 * page_, 8 * page_ + 5, 20 * page_};
      return popular[uniform(0, popular.size() - 1)];
    }
    if (r < 77) return uniform(1, page_);
    if (r < 97) return uniform(page_ + 1, 32 * page_);
    return uniform(32 * page_ + 1, 256 * page_);
  }

  bool allocate() {
    if (live_.size() >= kMaxLiveBuffers) return free_one();
    const std::size_t len = pick_length();
    const std::size_t system_before = calls_->allocation_calls();
    nuvec::Buffer buffer;
    bool refused = false;
    try {
      buffer = device_->new_buffer(len);
    } catch (const nuvec::OutOfMemory& e) {
      refused = true;
      WALK_EXPECT_EQ(e.stats(), model_.stats());
    }
    const auto address = reinterpret_cast<std::uintptr_t>(buffer.data());
    WALK_EXPECT(buffer.empty() || !model_.is_live(address));
    const ReferenceModel::Allocation expected = model_.allocate(len, address);
    const std::size_t system_calls = calls_->allocation_calls() - system_before;
    switch (expected.outcome) {
      case ReferenceModel::Outcome::empty:
        note(fmt::format("new_buffer({}) -> empty", len));
        WALK_EXPECT(!refused);
        WALK_EXPECT_EQ(buffer.size(), std::size_t{0});
        WALK_EXPECT_EQ(system_calls, std::size_t{0});
        return true;
      case ReferenceModel::Outcome::refused:
        note(fmt::format("new_buffer({}) -> refused", len));
        ++refusals_;
        WALK_EXPECT(refused);
        WALK_EXPECT_EQ(system_calls, std::size_t{0});
        return true;
      case ReferenceModel::Outcome::hit:
        note(fmt::format("new_buffer({}) -> hit {} B at {:#x}", len, expected.size, expected.address));
        ++hits_;
        WALK_EXPECT(!refused);
        WALK_EXPECT_EQ(address, expected.address);
        WALK_EXPECT_EQ(system_calls, std::size_t{0});
        break;
      case ReferenceModel::Outcome::miss:
        note(fmt::format("new_buffer({}) -> miss {} B at {:#x} (a hole)", len, expected.size, expected.address));
        ++misses_;
        WALK_EXPECT(!refused);
        WALK_EXPECT_EQ(address, expected.address);
        WALK_EXPECT_EQ(system_calls, std::size_t{0});
        break;
      case ReferenceModel::Outcome::system:
        note(fmt::format("new_buffer({}) -> system {} B at {:#x}", len, expected.size, address));
        ++system_;
        WALK_EXPECT(!refused);
        WALK_EXPECT_EQ(system_calls, std::size_t{1});
        break;
    }
    WALK_EXPECT_EQ(buffer.size(), len);
    WALK_EXPECT_EQ(buffer.capacity(), expected.size);
    WALK_EXPECT_EQ(address % 64, std::uintptr_t{0});
    if (expected.size >= page_) WALK_EXPECT_EQ(address % page_, std::uintptr_t{0});
    const auto tag = static_cast<std::byte>(uniform(0, 255));
    buffer.data()[0] = tag;
    buffer.data()[len - 1] = tag;
    live_.push_back(LiveBuffer{std::move(buffer), address, tag});
    return true;
  }

  bool free_one() {
    if (live_.empty()) return true;
    const std::size_t i = uniform(0, live_.size() - 1);
    LiveBuffer& victim = live_[i];
    const std::size_t len = victim.buffer.size();
    WALK_EXPECT(victim.buffer.data()[0] == victim.tag);
    WALK_EXPECT(victim.buffer.data()[len - 1] == victim.tag);
    note(fmt::format("free {} B at {:#x}", victim.buffer.capacity(), victim.key));
    const std::uintptr_t key = victim.key;
    std::swap(victim, live_.back());
    live_.pop_back();  // the buffer goes back to the device here
    model_.free(key);
    return true;
  }

  std::vector<nuvec::FileRange> pick_ranges(std::size_t file_size, bool valid) {
    std::vector<nuvec::FileRange> ranges;
    const std::size_t n = uniform(1, 3);
    for (std::size_t k = 0; k < n; ++k) {
      if (file_size == 0) {
        ranges.push_back({0, 1});
        continue;
      }
      const std::uint64_t offset = uniform(0, file_size - 1);
      const std::uint64_t length = uniform(1, std::min<std::size_t>(file_size - offset, 3 * page_));
      ranges.push_back({offset, length});
    }
    if (!valid) {
      nuvec::FileRange& bad = ranges[uniform(0, ranges.size() - 1)];
      if (chance(50)) {
        bad.length = 0;
      } else {
        bad.offset = file_size - std::min<std::size_t>(file_size, uniform(0, 10));
        bad.length = file_size - bad.offset + uniform(1, 2 * page_);
      }
    }
    return ranges;
  }

  bool check_contents(const nuvec::Mapping& mapping, const TempFile& file,
                      const std::vector<nuvec::FileRange>& ranges) {
    const auto& want = file.contents();
    if (mapping.whole_file()) {
      const auto bytes = mapping.bytes();
      WALK_EXPECT_EQ(bytes.size(), want.size());
      if (!want.empty()) {
        const std::size_t i = uniform(0, want.size() - 1);
        WALK_EXPECT(bytes[0] == want[0] && bytes[i] == want[i] && bytes.back() == want.back());
      }
      return true;
    }
    for (const nuvec::FileRange& r : ranges) {
      const auto bytes = mapping.range(r.offset, r.length);
      WALK_EXPECT_EQ(bytes.size(), r.length);
      WALK_EXPECT(bytes.front() == want[r.offset] && bytes.back() == want[r.offset + r.length - 1]);
    }
    return true;
  }

  bool map_one() {
    if (mappings_.size() >= kMaxLiveMappings) return unmap_one();
    const TempFile& file = *files_[uniform(0, files_.size() - 1)];
    const bool whole = chance(50);
    const bool valid = whole || !chance(5);
    const auto ranges = whole ? std::vector<nuvec::FileRange>{} : pick_ranges(file.size(), valid);
    const std::optional<std::size_t> m =
        whole ? std::optional(nuvec::mapping_size(file.size()))
              : nuvec_test::model_ranges_size(file.size(), ranges, page_);
    std::string what = whole ? fmt::format("map_file({} B)", file.size())
                             : fmt::format("map_ranges({} B, {} ranges)", file.size(), ranges.size());
    for (const auto& r : ranges) what += fmt::format(" [{}, +{}]", r.offset, r.length);
    nuvec::MappedFile mapped;
    bool refused = false, invalid = false;
    try {
      mapped = whole ? device_->map_file(file.path()) : device_->map_ranges(file.path(), ranges);
    } catch (const nuvec::OutOfMemory& e) {
      refused = true;
      WALK_EXPECT_EQ(e.stats(), model_.stats());
    } catch (const nuvec::InvalidArgument&) {
      invalid = true;
    }
    if (!m) {
      note(what + " -> invalid");
      ++invalid_;
      WALK_EXPECT(invalid);
      return true;
    }
    WALK_EXPECT(!invalid);
    const std::uintptr_t id = next_mapping_id_++;
    const bool accepted = model_.map(id, *m);
    note(fmt::format("{} -> {}", what, accepted ? fmt::format("{} B, id {}", *m, id) : "refused"));
    WALK_EXPECT_EQ(!refused, accepted);
    if (!accepted) {
      ++refusals_;
      return true;
    }
    WALK_EXPECT_EQ(mapped.mapped_bytes(), *m);
    WALK_EXPECT_EQ(mapped.file_size(), std::uint64_t{file.size()});
    if (!check_contents(*mapped.share(), file, ranges)) return false;
    LiveMapping live{std::move(mapped), nullptr, id};
    if (chance(30)) live.view = live.file.share();
    mappings_.push_back(std::move(live));
    return true;
  }

  bool unmap_one() {
    if (mappings_.empty()) return true;
    const std::size_t i = uniform(0, mappings_.size() - 1);
    LiveMapping victim = std::move(mappings_[i]);
    mappings_.erase(mappings_.begin() + static_cast<std::ptrdiff_t>(i));
    note(fmt::format("unmap id {}{}", victim.id, victim.view ? " (file, then view)" : ""));
    if (victim.view) {
      victim.file.reset();  // the view still owns it: nothing changes
      WALK_EXPECT_EQ(device_->memory(), model_.stats());
      victim.view.reset();
    } else {
      victim.file.reset();
    }
    model_.unmap(victim.id);
    return true;
  }

  bool set_memory_limit() {
    const std::size_t used = model_.stats().active_with_mapped;
    std::size_t n;
    const std::size_t r = uniform(0, 99);
    if (r < 15 && used > 0) {
      n = uniform(0, used - 1);
    } else if (r < 20) {
      n = used;
    } else if (r < 30) {
      n = 32 * kMiB;
    } else {
      n = used + uniform(0, 16 * kMiB);
    }
    std::optional<std::size_t> previous;
    try {
      previous = device_->set_memory_limit(n);
    } catch (const nuvec::InvalidArgument&) {
    }
    const std::optional<std::size_t> expected = model_.set_memory_limit(n);
    note(fmt::format("set_memory_limit({}) -> {}", n, expected ? "ok" : "invalid"));
    if (!expected) ++invalid_;
    WALK_EXPECT_EQ(previous.has_value(), expected.has_value());
    if (expected) WALK_EXPECT_EQ(*previous, *expected);
    return true;
  }

  bool set_cache_limit() {
    const std::size_t r = uniform(0, 99);
    const std::size_t n = r < 10 ? 0 : r < 20 ? 64 * kMiB : uniform(0, 12 * kMiB);
    note(fmt::format("set_cache_limit({})", n));
    WALK_EXPECT_EQ(device_->set_cache_limit(n), model_.set_cache_limit(n));
    return true;
  }

  bool set_wired_limit() {
    const std::size_t r = uniform(0, 99);
    const std::size_t n = r < 15 ? 0 : r < 30 ? kMaxWiredLimit : uniform(0, kMaxWiredLimit);
    note(fmt::format("set_wired_limit({})", n));
    const std::size_t previous = device_->set_wired_limit(n);
    WALK_EXPECT_EQ(previous, *model_.set_wired_limit(n, SIZE_MAX));
    return true;
  }

  // The device against the model, the invariants, and the system's books.
  bool check() {
    const nuvec::MemoryStats s = device_->memory();
    const nuvec::MemoryStats want = model_.stats();
    WALK_EXPECT_EQ(s, want);
    const std::string broken = nuvec_test::invariant_violations(s);
    WALK_EXPECT_EQ(broken, std::string());
    const CountingSystemCalls::Totals t = calls_->totals();
    if (policy_ == Policy::arena) {
      // Reservations are the anonymous mappings; what was given back is
      // counted in decommitted bytes, never from a locked page.
      WALK_EXPECT_EQ(t.blocks, model_.reservation_count());
      WALK_EXPECT_EQ(t.block_bytes, model_.reserved_bytes());
      WALK_EXPECT_EQ(t.decommitted_bytes, model_.decommitted_bytes());
      WALK_EXPECT_EQ(t.decommits_while_locked, std::size_t{0});
      WALK_EXPECT_EQ(t.decommits_outside, std::size_t{0});
    } else {
      WALK_EXPECT_EQ(t.blocks, model_.block_count());
      WALK_EXPECT_EQ(t.block_bytes, s.active + s.cache);
    }
    WALK_EXPECT_EQ(t.file_map_bytes, s.mapped);
    WALK_EXPECT_EQ(t.locked_bytes, s.wired);
    WALK_EXPECT_EQ(t.unknown_releases, std::size_t{0});
    WALK_EXPECT_EQ(t.freed_while_locked, std::size_t{0});
    WALK_EXPECT_EQ(t.double_locks, std::size_t{0});
    return true;
  }

#undef WALK_EXPECT
#undef WALK_EXPECT_EQ

  std::uint64_t seed_;
  Policy policy_;
  std::uint64_t step_ = 0;
  std::mt19937_64 rng_;
  std::size_t page_;
  std::shared_ptr<CountingSystemCalls> calls_;
  std::unique_ptr<nuvec::Device> device_;
  ReferenceModel model_;
  std::vector<std::unique_ptr<TempFile>> files_;
  std::vector<LiveBuffer> live_;
  std::vector<LiveMapping> mappings_;
  std::uintptr_t next_mapping_id_ = 1;
  std::deque<std::string> history_;
  std::size_t hits_ = 0, misses_ = 0, system_ = 0, refusals_ = 0, invalid_ = 0;
};

TEST(Property, RandomWalkMatchesReferenceModel) {
  const std::uint64_t seed = env_or("NUVEC_PROPERTY_SEED", kDefaultSeed);
  const std::uint64_t ops = env_or("NUVEC_PROPERTY_OPS", 1000000);
  SCOPED_TRACE(::testing::Message() << "NUVEC_PROPERTY_SEED=" << seed
                                    << " NUVEC_PROPERTY_OPS=" << ops);
  Walk walk(seed, Policy::arena);
  walk.run(ops);
}

TEST(Property, RandomWalkWithoutReservationsMatchesReferenceModel) {
  const std::uint64_t seed = env_or("NUVEC_PROPERTY_SEED", kDefaultSeed);
  const std::uint64_t ops = env_or("NUVEC_PROPERTY_OPS", 1000000) / 5;
  SCOPED_TRACE(::testing::Message() << "NUVEC_PROPERTY_SEED=" << seed
                                    << " NUVEC_PROPERTY_OPS=" << ops * 5);
  Walk walk(seed, Policy::blocks);
  walk.run(ops);
}

}  // namespace
