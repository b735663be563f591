// Loading: aligned files are mapped (views of the mapping, no copy),
// unaligned ones read into one buffer at 256-byte boundaries; views keep
// their storage alive; filters take only what they select; sharded
// checkpoints follow their index, which is checked as hostile input too.
#include <gtest/gtest.h>

#include <algorithm>

#include "io/safetensors/safetensors_test_support.h"
#include "nuvec/memory.h"
#include "nuvec/io/safetensors.h"
#include "support/temp_file.h"

namespace {

using nuvec::io::DType;
using nuvec::io::LoadPath;
using nuvec_test::random_tensor;
using nuvec_test::TempDir;
using nuvec_test::TestTensor;

constexpr DType kAllDTypes[] = {DType::BOOL, DType::U8,  DType::I8,  DType::U16,     DType::I16,    DType::U32,
                                DType::I32,  DType::U64, DType::I64, DType::F16,     DType::BF16,   DType::F32,
                                DType::F64,  DType::F8_E4M3,         DType::F8_E5M2, DType::C64};

std::vector<TestTensor> one_of_each_dtype(std::uint64_t seed) {
  std::vector<TestTensor> tensors;
  for (DType d : kAllDTypes) {
    tensors.push_back(random_tensor("t." + std::string(nuvec::io::dtype_name(d)), d, {3, 5}, seed++));
  }
  return tensors;
}

bool inside(std::span<const std::byte> part, std::span<const std::byte> whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

class SafetensorsLoad : public ::testing::Test {
 protected:
  std::unique_ptr<nuvec::Device> device_ = nuvec_test::fresh_device();
  nuvec::Device& dev() { return *device_; }
  TempDir dir_;
};

TEST_F(SafetensorsLoad, EveryDtypeRoundTripsThroughTheMappedPath) {
  const auto tensors = one_of_each_dtype(1);
  const auto path = dir_ / "all.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(tensors), {{"format", "pt"}});
  const auto loaded = nuvec::io::load_safetensors(dev(), path);
  nuvec_test::expect_tensors(loaded, tensors);
  EXPECT_EQ(loaded.sources().at(0).load_path, LoadPath::mapped);
  EXPECT_EQ(loaded.metadata().at("format"), "pt");
  const auto header = nuvec::io::read_safetensors_header(path);
  ASSERT_EQ(header.tensors.size(), loaded.size());
  for (std::size_t i = 0; i < loaded.size(); ++i) EXPECT_EQ(loaded.tensors()[i].name, header.tensors[i].name);  // file order
}

TEST_F(SafetensorsLoad, EveryDtypeRoundTripsThroughTheReadPath) {
  auto tensors = one_of_each_dtype(2);
  tensors.insert(tensors.begin(), random_tensor("a.odd", DType::U8, {1}, 99));  // misaligns what follows
  const auto path = dir_ / "unaligned.safetensors";
  nuvec_test::write_file(path, nuvec_test::unpadded_file(tensors));
  const auto loaded = nuvec::io::load_safetensors(dev(), path);
  nuvec_test::expect_tensors(loaded, tensors);
  EXPECT_EQ(loaded.sources().at(0).load_path, LoadPath::read);
}

TEST_F(SafetensorsLoad, AlignedFileIsMappedWholeAndViewsPointIntoTheMapping) {
  const auto tensors = one_of_each_dtype(3);
  const auto path = dir_ / "a.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(tensors));
  const auto size = std::filesystem::file_size(path);

  const auto loaded = nuvec::io::load_safetensors(dev(), path);
  const nuvec::MemoryStats s = dev().memory();
  EXPECT_EQ(s.mapped, nuvec::mapping_size(size));
  EXPECT_EQ(s.active, 0u) << "a mapped load copies nothing";
  EXPECT_EQ(loaded.sources()[0].mapped_bytes, nuvec::mapping_size(size));

  const auto mapping = std::static_pointer_cast<const nuvec::Mapping>(loaded.tensors()[0].storage);
  ASSERT_NE(mapping, nullptr);
  for (const auto& t : loaded.tensors()) {
    EXPECT_EQ(t.storage, loaded.tensors()[0].storage) << "one mapping for the file";
    EXPECT_TRUE(inside(t.bytes, mapping->bytes())) << t.name;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.bytes.data()) % nuvec::io::dtype_size(t.dtype), 0u) << t.name;
  }
}

TEST_F(SafetensorsLoad, UnalignedFileIsReadIntoOneBufferAtBoundariesOf256Bytes) {
  std::vector<TestTensor> tensors = {random_tensor("a", DType::U8, {3}, 1), random_tensor("b", DType::F32, {7}, 2),
                                     random_tensor("c", DType::F16, {300}, 3), random_tensor("d", DType::I64, {2}, 4)};
  const auto path = dir_ / "mlx.safetensors";
  nuvec_test::write_file(path, nuvec_test::unpadded_file(tensors));
  ASSERT_FALSE(nuvec::io::read_safetensors_header(path).aligned());

  const auto loaded = nuvec::io::load_safetensors(dev(), path);
  nuvec_test::expect_tensors(loaded, tensors);
  const auto& source = loaded.sources()[0];
  EXPECT_EQ(source.load_path, LoadPath::read);
  // a at 0, b at 256, c at 512 (600 bytes), d at 1280: 1296 bytes.
  EXPECT_EQ(source.buffer_bytes, *nuvec::allocation_size(1296));
  const nuvec::MemoryStats s = dev().memory();
  EXPECT_EQ(s.active, source.buffer_bytes);
  EXPECT_EQ(s.mapped, 0u);
  const std::byte* base = loaded.tensors()[0].bytes.data();
  for (const auto& t : loaded.tensors()) {
    EXPECT_EQ(t.storage, loaded.tensors()[0].storage) << "one buffer for the file";
    EXPECT_EQ((t.bytes.data() - base) % 256, 0) << t.name;
  }
}

TEST_F(SafetensorsLoad, LargeUnalignedFileIsReadInPiecesOnSeveralThreads) {
  // 8 MiB pieces: these tensors make six of them, spread over the threads.
  const std::vector<TestTensor> tensors = {random_tensor("a", DType::U8, {5}, 1),
                                           random_tensor("b", DType::BF16, {10'000'001}, 2),
                                           random_tensor("c", DType::F32, {7'000'003}, 3)};
  const auto path = dir_ / "large.safetensors";
  nuvec_test::write_file(path, nuvec_test::unpadded_file(tensors));
  const auto loaded = nuvec::io::load_safetensors(dev(), path);
  EXPECT_EQ(loaded.sources()[0].load_path, LoadPath::read);
  nuvec_test::expect_tensors(loaded, tensors);
  EXPECT_EQ(dev().memory().active, nuvec::io::footprint(path).active);
}

TEST_F(SafetensorsLoad, ViewsKeepTheMappingAliveAndMappedFallsWithTheLastView) {
  const auto tensors = one_of_each_dtype(4);
  const auto path = dir_ / "a.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(tensors));
  std::optional<nuvec::io::TensorView> kept;
  {
    const auto loaded = nuvec::io::load_safetensors(dev(), path);
    kept = *loaded.find("t.F32");
  }
  EXPECT_EQ(dev().memory().mapped, nuvec::mapping_size(std::filesystem::file_size(path)));
  EXPECT_EQ(nuvec_test::to_vector(kept->bytes), tensors[11].bytes) << "still readable";
  kept.reset();
  EXPECT_EQ(dev().memory().mapped, 0u);
}

TEST_F(SafetensorsLoad, ViewsKeepTheBufferAliveAndActiveFallsWithTheLastView) {
  const std::vector<TestTensor> tensors = {random_tensor("a", DType::U8, {3}, 1),
                                           random_tensor("b", DType::F32, {5}, 2)};
  const auto path = dir_ / "mlx.safetensors";
  nuvec_test::write_file(path, nuvec_test::unpadded_file(tensors));
  std::optional<nuvec::io::TensorView> kept;
  {
    const auto loaded = nuvec::io::load_safetensors(dev(), path);
    kept = *loaded.find("b");
  }
  EXPECT_GT(dev().memory().active, 0u);
  EXPECT_EQ(nuvec_test::to_vector(kept->bytes), tensors[1].bytes);
  kept.reset();
  EXPECT_EQ(dev().memory().active, 0u);
}

TEST_F(SafetensorsLoad, FilterOnAnAlignedFileMapsOnlyTheSelectedPages) {
  const std::size_t page = nuvec::page_size();
  // Four tensors of 3 pages each: taking the 2nd and 4th maps 3 + 3 pages
  // (plus at most one more each for where they start).
  std::vector<TestTensor> tensors;
  for (int i = 0; i < 4; ++i) tensors.push_back(random_tensor("w" + std::to_string(i), DType::F32, {3 * page / 4}, i));
  const auto path = dir_ / "big.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(tensors));

  const nuvec::io::TensorFilter filter{"w1", "w3"};
  const auto predicted = nuvec::io::footprint(path, filter);
  const auto loaded = nuvec::io::load_safetensors(dev(), path, {filter});
  nuvec_test::expect_tensors(loaded, {tensors[1], tensors[3]});
  EXPECT_EQ(loaded.sources()[0].load_path, LoadPath::mapped);
  const nuvec::MemoryStats s = dev().memory();
  EXPECT_EQ(s.mapped, predicted.mapped);
  EXPECT_LE(s.mapped, 8 * page);
  EXPECT_LT(s.mapped, nuvec::mapping_size(std::filesystem::file_size(path)));
  EXPECT_EQ(s.active, 0u);
}

TEST_F(SafetensorsLoad, FilterOnAnUnalignedFileReadsOnlyTheSelectedTensors) {
  const std::vector<TestTensor> tensors = {random_tensor("a", DType::U8, {3}, 1),
                                           random_tensor("big", DType::F32, {100000}, 2),
                                           random_tensor("c", DType::F16, {7}, 3)};
  const auto path = dir_ / "mlx.safetensors";
  // Metadata of a chosen length moves the data start until "c" is misaligned.
  for (std::string pad;; pad += 'x') {
    nuvec_test::write_file(path, nuvec_test::unpadded_file(tensors, {{"pad", pad}}));
    const auto header = nuvec::io::read_safetensors_header(path);
    if (!header.tensor_aligned(header.tensors[2])) break;
  }
  const auto loaded = nuvec::io::load_safetensors(
      dev(), path, {nuvec::io::TensorFilter([](std::string_view name) { return name != "big"; })});
  nuvec_test::expect_tensors(loaded, {tensors[0], tensors[2]});
  EXPECT_EQ(dev().memory().active, *nuvec::allocation_size(256 + 14));
}

TEST_F(SafetensorsLoad, FilterThatSelectsNothingCostsNothing) {
  const auto tensors = one_of_each_dtype(5);
  const auto path = dir_ / "a.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(tensors));
  const auto loaded = nuvec::io::load_safetensors(
      dev(), path, {nuvec::io::TensorFilter([](std::string_view) { return false; })});
  EXPECT_EQ(loaded.size(), 0u);
  EXPECT_EQ(loaded.sources()[0].load_path, LoadPath::none);
  EXPECT_EQ(dev().memory(), nuvec_test::fresh_device()->memory());
}

TEST_F(SafetensorsLoad, FilterNamingAMissingTensorIsRefused) {
  const auto path = dir_ / "a.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(one_of_each_dtype(6)));
  const nuvec::MemoryStats before = dev().memory();
  EXPECT_THROW(nuvec::io::load_safetensors(dev(), path, {nuvec::io::TensorFilter{"t.F32", "nope"}}),
               nuvec::InvalidArgument);
  EXPECT_EQ(dev().memory(), before);
}

TEST_F(SafetensorsLoad, AtThrowsForAMissingName) {
  const auto path = dir_ / "a.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(one_of_each_dtype(7)));
  const auto loaded = nuvec::io::load_safetensors(dev(), path);
  EXPECT_EQ(loaded.at("t.BOOL").dtype, DType::BOOL);
  EXPECT_EQ(loaded.find("nope"), nullptr);
  EXPECT_THROW(loaded.at("nope"), nuvec::InvalidArgument);
}

// --- sharded checkpoints -----------------------------------------------------

class SafetensorsSharded : public SafetensorsLoad {
 protected:
  void SetUp() override {
    first_ = {random_tensor("layers.0.w", DType::BF16, {64, 8}, 1), random_tensor("embed", DType::F32, {16}, 2)};
    second_ = {random_tensor("layers.1.w", DType::BF16, {64, 8}, 3), random_tensor("norm", DType::F16, {9}, 4)};
    nuvec::io::save_safetensors(dir_ / "model-00001-of-00002.safetensors", nuvec_test::views_of(first_),
                                {{"format", "pt"}});
    // The second shard as MLX would write it: read, not mapped.
    nuvec_test::write_file(dir_ / "model-00002-of-00002.safetensors",
                           nuvec_test::unpadded_file({random_tensor("a", DType::U8, {1}, 9), second_[0], second_[1]},
                                                     {{"format", "mlx"}}));
  }
  void write_index(const std::string& weight_map) {
    nuvec_test::write_file(dir_ / "model.safetensors.index.json",
                           R"({"metadata": {"total_size": 2134}, "weight_map": {)" + weight_map + "}}");
  }
  std::string good_weight_map() const {
    return R"("embed": "model-00001-of-00002.safetensors", "layers.0.w": "model-00001-of-00002.safetensors",)"
           R"( "layers.1.w": "model-00002-of-00002.safetensors", "norm": "model-00002-of-00002.safetensors")";
  }
  // The file offset of `needle` in the index.
  std::uint64_t index_offset(std::string_view needle) {
    const auto text = nuvec_test::read_file(dir_ / "model.safetensors.index.json");
    const std::string_view s(reinterpret_cast<const char*>(text.data()), text.size());
    return s.find(needle);
  }

  std::vector<TestTensor> first_, second_;
};

TEST_F(SafetensorsSharded, DirectoryWithAnIndexLoadsEveryShard) {
  write_index(good_weight_map());
  for (const auto& path : {dir_.path(), dir_ / "model.safetensors.index.json"}) {
    auto dev = nuvec_test::fresh_device();
    const auto loaded = nuvec::io::load_safetensors(*dev, path);
    std::vector<TestTensor> all = first_;
    all.insert(all.end(), second_.begin(), second_.end());
    nuvec_test::expect_tensors(loaded, all);  // "a" is in shard 2 but not in the weight_map
    ASSERT_EQ(loaded.sources().size(), 2u);
    EXPECT_EQ(loaded.sources()[0].load_path, LoadPath::mapped);
    EXPECT_EQ(loaded.sources()[1].load_path, LoadPath::read);
    EXPECT_EQ(loaded.metadata().at("format"), "pt") << "the first shard's value wins";
    EXPECT_EQ(loaded.sources()[1].metadata.at("format"), "mlx");
    EXPECT_EQ(loaded.tensors()[0].name, "embed") << "shards by name, header order within (F32 before BF16)";
    const nuvec::io::Footprint fp = nuvec::io::footprint(path);
    EXPECT_EQ(dev->memory().mapped, fp.mapped);
    EXPECT_EQ(dev->memory().active, fp.active);
  }
}

TEST_F(SafetensorsSharded, DirectoryWithASingleFile) {
  TempDir single;
  nuvec::io::save_safetensors(single / "model.safetensors", nuvec_test::views_of(first_));
  nuvec_test::expect_tensors(nuvec::io::load_safetensors(dev(), single.path()), first_);
}

TEST_F(SafetensorsSharded, DirectoryWithNoCheckpointIsRefused) {
  TempDir empty;
  EXPECT_THROW(nuvec::io::load_safetensors(dev(), empty.path()), nuvec::InvalidArgument);
}

TEST_F(SafetensorsSharded, FilterAcrossShards) {
  write_index(good_weight_map());
  const nuvec::io::TensorFilter filter{"embed", "norm"};
  const auto loaded = nuvec::io::load_safetensors(dev(), dir_.path(), {filter});
  nuvec_test::expect_tensors(loaded, {first_[1], second_[1]});
  EXPECT_EQ(dev().memory().mapped, nuvec::page_size()) << "one page of shard 1";
  EXPECT_EQ(dev().memory().active, *nuvec::allocation_size(18)) << "18 bytes of shard 2";
  EXPECT_EQ(nuvec::io::footprint(dir_.path(), filter).mapped, nuvec::page_size());
}

TEST_F(SafetensorsSharded, ShardPathClimbingOutIsRefused) {
  write_index(R"("embed": "../outside.safetensors")");
  nuvec_test::expect_format_error(
      dev(), [&] { nuvec::io::load_safetensors(dev(), dir_.path()); }, dir_ / "model.safetensors.index.json",
      index_offset("\"../"), "climbs out");
}

TEST_F(SafetensorsSharded, AbsoluteShardPathIsRefused) {
  write_index(R"("embed": "/etc/passwd")");
  nuvec_test::expect_format_error(
      dev(), [&] { nuvec::io::load_safetensors(dev(), dir_.path()); }, dir_ / "model.safetensors.index.json",
      index_offset("\"/etc"), "absolute");
}

TEST_F(SafetensorsSharded, TensorNotInItsShardIsRefused) {
  write_index(R"("embed": "model-00002-of-00002.safetensors", "norm": "model-00002-of-00002.safetensors")");
  nuvec_test::expect_format_error(
      dev(), [&] { nuvec::io::load_safetensors(dev(), dir_.path()); }, dir_ / "model.safetensors.index.json",
      index_offset("\"embed\""), "which does not hold it");
}

TEST_F(SafetensorsSharded, TensorListedTwiceIsRefused) {
  write_index(R"("embed": "model-00001-of-00002.safetensors", "embed": "model-00002-of-00002.safetensors")");
  nuvec_test::expect_format_error(
      dev(), [&] { nuvec::io::load_safetensors(dev(), dir_.path()); }, dir_ / "model.safetensors.index.json",
      index_offset("\"embed\": \"model-00002"), "listed twice");
}

TEST_F(SafetensorsSharded, IndexWithoutAWeightMapIsRefused) {
  nuvec_test::write_file(dir_ / "model.safetensors.index.json", R"({"metadata": {}})");
  nuvec_test::expect_format_error(
      dev(), [&] { nuvec::io::load_safetensors(dev(), dir_.path()); }, dir_ / "model.safetensors.index.json", 0,
      "no \"weight_map\"");
}

TEST_F(SafetensorsSharded, BrokenShardRefusesTheWholeLoadBeforeAnythingIsMapped) {
  write_index(good_weight_map());
  // Shard 1 is fine (and would be mapped); shard 2's header is broken.
  nuvec_test::write_file(dir_ / "model-00002-of-00002.safetensors", nuvec_test::safetensors_bytes("{\"x\": 1}"));
  nuvec_test::expect_format_error(
      dev(), [&] { nuvec::io::load_safetensors(dev(), dir_.path()); }, dir_ / "model-00002-of-00002.safetensors", 9,
      "not an object");
}

}  // namespace
