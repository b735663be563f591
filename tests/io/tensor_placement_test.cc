// The one map-or-read rule of every loader (src/io/tensor_placement.h), on
// real files and real mappings of a CPU device: what it plans, that placing
// adds exactly the plan's footprint, that the bytes are the file's, and that
// a refused placement (extent past the end, a file that changed, the memory
// limit) says why and changes no statistic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "io/tensor_placement.h"
#include "nuvec/nuvec.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"

namespace {

using nuvec::MemoryStats;
using nuvec::io::InputFile;
using nuvec::io::LoadPath;
using nuvec::io::MapScope;
using nuvec::io::PlacedTensors;
using nuvec::io::TensorExtent;
using nuvec::io::TensorPlacement;
using nuvec::io::place_tensors;
using nuvec::io::plan_placement;
using nuvec_test::TempFile;

class TensorPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override { device_ = std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), false); }
  void TearDown() override { EXPECT_EQ(nuvec_test::invariant_violations(device_->memory()), ""); }

  // Places `extents` of `file` and checks the statistics rose by exactly the
  // plan's footprint and each extent's bytes are the file's.
  PlacedTensors place_and_check(const TempFile& file, const std::vector<TensorExtent>& extents,
                                const TensorPlacement& plan) {
    const MemoryStats before = device_->memory();
    const InputFile input(file.path());
    PlacedTensors placed = place_tensors(*device_, input, plan, extents);
    const MemoryStats after = device_->memory();
    EXPECT_EQ(after.mapped - before.mapped, plan.footprint().mapped);
    EXPECT_EQ(after.active - before.active, plan.footprint().active);
    EXPECT_EQ(after.peak_with_mapped - before.peak_with_mapped, plan.footprint().peak_with_mapped());
    EXPECT_EQ(placed.mapped_bytes, plan.mapped_bytes);
    EXPECT_EQ(placed.buffer_bytes, plan.buffer_bytes);
    EXPECT_EQ(placed.bytes.size(), extents.size());
    for (std::size_t i = 0; i < extents.size(); ++i) {
      const auto want = std::span(file.contents()).subspan(extents[i].file_offset, extents[i].length);
      EXPECT_TRUE(std::equal(placed.bytes[i].begin(), placed.bytes[i].end(), want.begin(), want.end())) << i;
    }
    return placed;
  }

  std::unique_ptr<nuvec::Device> device_;
};

TEST_F(TensorPlacementTest, AlignedTensorsAreViewsOfOneMappingOfTheWholeFile) {
  const TempFile file(3 * 4096, 1);
  const std::vector<TensorExtent> extents = {{64, 400, 4, "a"}, {1024, 8000, 8, "b"}, {9024, 0, 8, "empty"}};
  const TensorPlacement plan = plan_placement(InputFile(file.path()), extents);
  ASSERT_EQ(plan.path, LoadPath::mapped);
  EXPECT_EQ(plan.mapped_bytes, nuvec::mapping_size(file.size()));
  EXPECT_EQ(plan.buffer_bytes, 0u);
  {
    const PlacedTensors placed = place_and_check(file, extents, plan);
    const auto* mapping = static_cast<const nuvec::Mapping*>(placed.storage.get());
    ASSERT_NE(mapping, nullptr);
    EXPECT_TRUE(mapping->whole_file());
    EXPECT_EQ(placed.bytes[1].data(), mapping->bytes().data() + 1024) << "in place: no copy";
    EXPECT_TRUE(placed.bytes[2].empty());
    EXPECT_TRUE(placed.buffer.empty()) << "a mapping is never writable";
  }
  EXPECT_EQ(device_->memory().mapped, 0u) << "the mapping goes with its last owner";
}

TEST_F(TensorPlacementTest, MapScopeTensorsMapsOnlyTheirPages) {
  const TempFile file(8 * 4096, 2);
  const std::vector<TensorExtent> extents = {{4096 + 16, 100, 4, "a"}, {5 * 4096, 4096, 4, "b"}};
  const TensorPlacement plan = plan_placement(InputFile(file.path()), extents, {.map_scope = MapScope::tensors, .converted_on_host = {}});
  ASSERT_EQ(plan.path, LoadPath::mapped);
  ASSERT_EQ(plan.map_ranges.size(), 2u);
  EXPECT_EQ(plan.mapped_bytes, 2 * nuvec::page_size()) << "one page each, not the file's eight";
  const PlacedTensors placed = place_and_check(file, extents, plan);
  EXPECT_FALSE(static_cast<const nuvec::Mapping*>(placed.storage.get())->whole_file());
}

TEST_F(TensorPlacementTest, OneMisalignedTensorReadsThemAllIntoOneBuffer) {
  const TempFile file(20000, 3);
  // The second starts at an odd offset for a 4-byte element.
  const std::vector<TensorExtent> extents = {{0, 300, 4, "a"}, {301, 5000, 4, "b"}, {6000, 0, 4, "c"}, {7000, 13, 1, "d"}};
  const TensorPlacement plan = plan_placement(InputFile(file.path()), extents);
  ASSERT_EQ(plan.path, LoadPath::read);
  EXPECT_EQ(plan.buffer_offsets, (std::vector<std::uint64_t>{0, 512, 5632, 5632}));
  EXPECT_EQ(plan.buffer_length, 5632u + 13);
  EXPECT_EQ(plan.buffer_bytes, *nuvec::allocation_size(5632 + 13));
  EXPECT_EQ(plan.mapped_bytes, 0u);
  const PlacedTensors placed = place_and_check(file, extents, plan);
  for (const auto& bytes : placed.bytes) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(bytes.data()) % 64, 0u) << "each at a 256-byte boundary of the buffer";
  }
  EXPECT_EQ(placed.bytes[1].data() - placed.bytes[0].data(), 512);
  EXPECT_TRUE(placed.buffer.empty()) << "writable only when the plan is for a conversion";
}

TEST_F(TensorPlacementTest, ManyTensorsAreReadInPiecesByParallelReads) {
  // Larger than one 8 MiB piece of read_in_parallel, and many small ones:
  // the bytes must come out in place whatever the pieces and threads.
  const TempFile file((std::size_t{9} << 20) + 333, 4);
  std::vector<TensorExtent> extents = {{1, std::size_t{9} << 20, 2, "big"}};
  for (std::uint64_t i = 0; i < 200; ++i) extents.push_back({(std::size_t{9} << 20) + i, 7 + i % 5, 1, "small"});
  const TensorPlacement plan = plan_placement(InputFile(file.path()), extents);
  ASSERT_EQ(plan.path, LoadPath::read);
  place_and_check(file, extents, plan);
}

TEST_F(TensorPlacementTest, AConversionIsAlwaysReadAndWritable) {
  const TempFile file(4096, 5);
  const std::vector<TensorExtent> extents = {{128, 1024, 4, "data"}};  // aligned: would be mapped
  const TensorPlacement plan = plan_placement(InputFile(file.path()), extents, {.map_scope = MapScope::whole_file, .converted_on_host = "swapped"});
  ASSERT_EQ(plan.path, LoadPath::read);
  const PlacedTensors placed = place_and_check(file, extents, plan);
  ASSERT_EQ(placed.buffer.size(), 1024u);
  EXPECT_EQ(placed.buffer.data(), placed.bytes[0].data());
}

TEST_F(TensorPlacementTest, NoBytesPlacesNothing) {
  const TempFile file(100, 6);
  const std::vector<TensorExtent> extents = {{10, 0, 4, "a"}, {100, 0, 4, "b"}};
  const TensorPlacement plan = plan_placement(InputFile(file.path()), extents);
  EXPECT_EQ(plan.path, LoadPath::none);
  EXPECT_EQ(plan.footprint(), nuvec::io::Footprint{});
  const MemoryStats before = device_->memory();
  const PlacedTensors placed = place_tensors(*device_, InputFile(file.path()), plan, extents);
  EXPECT_EQ(placed.storage, nullptr);
  EXPECT_EQ(placed.bytes.size(), 2u);
  EXPECT_EQ(device_->memory(), before);
}

TEST_F(TensorPlacementTest, AnExtentPastTheEndIsAFormatErrorNamingTheFile) {
  const TempFile file(1000, 7);
  for (const TensorExtent& e : {TensorExtent{990, 11, 1, "tensor \"x\""}, TensorExtent{1001, 0, 1, "tensor \"x\""},
                                TensorExtent{8, UINT64_MAX, 1, "tensor \"x\""}}) {
    try {
      plan_placement(InputFile(file.path()), std::span(&e, 1));
      ADD_FAILURE() << "accepted an extent at " << e.file_offset;
    } catch (const nuvec::FormatError& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find(file.path().string()), std::string::npos) << what;
      EXPECT_NE(what.find("tensor \"x\""), std::string::npos) << what;
      EXPECT_NE(what.find("past the end of the file"), std::string::npos) << what;
    }
  }
}

TEST_F(TensorPlacementTest, AFileThatChangedSizeIsRefusedBeforeAnythingIsCounted) {
  for (const std::uint64_t misalign : {0, 1}) {  // the mapped path, then the read path
    const TempFile file(8192, 8);
    const std::vector<TensorExtent> extents = {{misalign, 4000, 4, "a"}};
    const InputFile input(file.path());
    const TensorPlacement plan = plan_placement(input, extents);
    ASSERT_EQ(plan.path, misalign == 0 ? LoadPath::mapped : LoadPath::read);
    std::filesystem::resize_file(file.path(), 4096);
    const MemoryStats before = device_->memory();
    try {
      place_tensors(*device_, input, plan, extents);
      ADD_FAILURE() << "placed tensors of a file that shrank";
    } catch (const nuvec::FormatError& error) {
      EXPECT_NE(std::string(error.what()).find(file.path().string()), std::string::npos) << error.what();
    }
    EXPECT_EQ(device_->memory(), before);
  }
}

TEST_F(TensorPlacementTest, PastTheMemoryLimitIsOutOfMemoryAndChangesNothing) {
  const TempFile file(64 * 1024, 9);
  device_->set_memory_limit(16 * 1024);
  const MemoryStats before = device_->memory();
  for (const std::uint64_t misalign : {0, 1}) {
    const std::vector<TensorExtent> extents = {{misalign, 32 * 1024, 4, "a"}};
    const InputFile input(file.path());
    const TensorPlacement plan = plan_placement(input, extents);
    EXPECT_THROW(place_tensors(*device_, input, plan, extents), nuvec::OutOfMemory);
    EXPECT_EQ(device_->memory(), before);
  }
}

}  // namespace
