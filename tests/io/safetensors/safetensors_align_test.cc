// Aligning: align_safetensors rewrites one file in the reference layout;
// align_checkpoint does it in place for a file, a model directory or a
// sharded index, file by file and atomically, with a dry run. Files nuvec
// wrote before (with __nuvec_padding_ tensors) still load, padding hidden,
// and align rewrites them clean.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "io/safetensors/safetensors_test_support.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/memory.h"

namespace {

using nuvec::io::DType;
using nuvec::io::LoadPath;
using nuvec_test::random_tensor;
using nuvec_test::TempDir;
using nuvec_test::TestTensor;

const std::filesystem::path kAlignFixtures = NUVEC_SAFETENSORS_FIXTURES;

using nuvec_test::awkward_tensors;

// Every key of the header's JSON, __metadata__ left out: what any reader lists.
std::vector<std::string> raw_names(const std::filesystem::path& path) {
  const auto file = nuvec_test::read_file(path);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<std::uint64_t>(file[i]);
  std::vector<std::string> names;
  const auto doc = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(file.data()) + 8, n));
  for (const auto& [k, v] : doc.items()) {
    if (k != "__metadata__") names.push_back(k);
  }
  return names;
}

std::size_t padding_names(const std::vector<std::string>& names) {
  return std::count_if(names.begin(), names.end(), [](const auto& n) { return n.starts_with("__nuvec_padding_"); });
}

// What save_safetensors writes for these tensors: the reference layout.
std::vector<std::byte> saved_bytes(const TempDir& dir, const std::vector<nuvec::io::TensorView>& views,
                                   const std::map<std::string, std::string>& metadata) {
  const auto path = dir / "reference-layout.tmp";
  nuvec::io::save_safetensors(path, views, metadata);
  auto bytes = nuvec_test::read_file(path);
  std::filesystem::remove(path);
  return bytes;
}

ino_t inode(const std::filesystem::path& path) {
  struct stat st{};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

std::size_t entries(const std::filesystem::path& dir) {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

class SafetensorsAlign : public ::testing::Test {
 protected:
  std::unique_ptr<nuvec::Device> device_ = nuvec_test::fresh_device();
  TempDir dir_;
};

// --- files nuvec wrote before ---------------------------------------------------

TEST_F(SafetensorsAlign, TheOldPaddedFixtureLoadsMappedWithItsPaddingHidden) {
  const auto fixture = kAlignFixtures / "nuvec_padded.safetensors";
  EXPECT_EQ(padding_names(raw_names(fixture)), 31u) << "every tensor but the last (empty) one is followed by padding";
  const auto header = nuvec::io::read_safetensors_header(fixture);
  EXPECT_EQ(header.padding_tensors, 31u);
  const auto loaded = nuvec::io::load_safetensors(*device_, fixture);
  EXPECT_EQ(loaded.size(), 32u);
  for (const auto& t : loaded.tensors()) EXPECT_FALSE(t.name.starts_with("__nuvec_padding_")) << t.name;
  EXPECT_EQ(loaded.sources()[0].load_path, LoadPath::mapped);
  EXPECT_EQ(loaded.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"writer", "nuvec"}}));
}

TEST_F(SafetensorsAlign, TheTestsOldLayoutBuilderIsTheOldWriterByteForByte) {
  const auto fixture = kAlignFixtures / "nuvec_padded.safetensors";
  const auto loaded = nuvec::io::load_safetensors(*device_, fixture);
  std::vector<TestTensor> tensors;
  for (const auto& t : loaded.tensors()) tensors.push_back({t.name, t.dtype, t.shape, nuvec_test::to_vector(t.bytes)});
  EXPECT_EQ(nuvec_test::old_padded_file(tensors, loaded.metadata()), nuvec_test::read_file(fixture));
}

TEST_F(SafetensorsAlign, AlignRewritesAnOldPaddedFileCleanInTheReferenceLayout) {
  const auto fixture = kAlignFixtures / "nuvec_padded.safetensors";
  const auto out = dir_ / "clean.safetensors";
  nuvec::io::align_safetensors(fixture, out);
  const auto old_load = nuvec::io::load_safetensors(*device_, fixture);
  EXPECT_EQ(padding_names(raw_names(out)), 0u);
  EXPECT_EQ(raw_names(out).size(), 32u) << "exactly the tensors, as every reader lists them";
  EXPECT_EQ(nuvec_test::read_file(out), saved_bytes(dir_, old_load.tensors(), old_load.metadata()));
  const auto loaded = nuvec::io::load_safetensors(*device_, out);
  EXPECT_EQ(loaded.sources()[0].load_path, LoadPath::mapped);
  for (const auto& t : old_load.tensors()) {
    EXPECT_EQ(nuvec_test::to_vector(loaded.at(t.name).bytes), nuvec_test::to_vector(t.bytes)) << t.name;
  }
  EXPECT_LT(std::filesystem::file_size(out), std::filesystem::file_size(fixture)) << "the gaps are gone";
}

// --- one file ------------------------------------------------------------------

TEST_F(SafetensorsAlign, AlignRewritesAnUnalignedFile) {
  std::vector<TestTensor> tensors = awkward_tensors();
  tensors.push_back(random_tensor("big", DType::F32, {2'500'000}, 7));  // 10 MB: more than one 8 MiB piece
  const auto in = dir_ / "mlx.safetensors";
  const auto out = dir_ / "aligned.safetensors";
  const auto original = nuvec_test::unpadded_file(tensors, {{"format", "mlx"}});
  nuvec_test::write_file(in, original);
  ASSERT_FALSE(nuvec::io::read_safetensors_header(in).aligned());

  nuvec::io::align_safetensors(in, out);
  EXPECT_EQ(nuvec_test::read_file(in), original) << "the input is untouched";
  EXPECT_TRUE(nuvec::io::read_safetensors_header(out).aligned());
  EXPECT_EQ(nuvec_test::read_file(out), saved_bytes(dir_, nuvec_test::views_of(tensors), {{"format", "mlx"}}));
  const auto loaded = nuvec::io::load_safetensors(*device_, out);
  EXPECT_EQ(loaded.sources()[0].load_path, LoadPath::mapped);
  nuvec_test::expect_tensors(loaded, tensors);
}

TEST_F(SafetensorsAlign, AlignInPlaceAndAgainChangesNothingMore) {
  const auto path = dir_ / "m.safetensors";
  const auto tensors = awkward_tensors();
  nuvec_test::write_file(path, nuvec_test::unpadded_file(tensors));
  nuvec::io::align_safetensors(path, path);
  const auto once = nuvec_test::read_file(path);
  nuvec::io::align_safetensors(path, path);
  EXPECT_EQ(nuvec_test::read_file(path), once);
  nuvec_test::expect_tensors(nuvec::io::load_safetensors(*device_, path), tensors);
  EXPECT_EQ(entries(dir_.path()), 1u) << "no temporary left";
}

TEST_F(SafetensorsAlign, AlignOfAHostileFileIsAFormatErrorAndWritesNothing) {
  const auto in = dir_ / "bad.safetensors";
  nuvec_test::write_file(in, nuvec_test::safetensors_bytes("{\"w\": 1}"));
  EXPECT_THROW(nuvec::io::align_safetensors(in, dir_ / "out.safetensors"), nuvec::FormatError);
  EXPECT_EQ(entries(dir_.path()), 1u) << "no output, no temporary";
}

TEST_F(SafetensorsAlign, AFileInTheReferenceLayoutIsLeftAsItIs) {
  const auto path = dir_ / "model.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(awkward_tensors()));
  const auto bytes = nuvec_test::read_file(path);
  const ino_t before = inode(path);
  const auto result = nuvec::io::align_checkpoint(dir_.path());
  ASSERT_EQ(result.files.size(), 1u);
  EXPECT_FALSE(result.files[0].changes());
  EXPECT_EQ(result.changed_files(), 0u);
  EXPECT_FALSE(result.index.has_value());
  EXPECT_EQ(inode(path), before) << "not even renamed over";
  EXPECT_EQ(nuvec_test::read_file(path), bytes);
}

TEST_F(SafetensorsAlign, AModelDirectoryWithAnOldPaddedFileIsRewrittenInPlace) {
  const auto tensors = awkward_tensors();
  const auto path = dir_ / "model.safetensors";
  nuvec_test::write_file(path, nuvec_test::old_padded_file(tensors, {{"format", "pt"}}));
  const auto result = nuvec::io::align_checkpoint(dir_.path());
  ASSERT_EQ(result.files.size(), 1u);
  ASSERT_EQ(result.files[0].reasons.size(), 1u);
  EXPECT_NE(result.files[0].reasons[0].find("4 __nuvec_padding_* tensors"), std::string::npos)
      << result.files[0].reasons[0];
  EXPECT_EQ(result.files[0].load_before, LoadPath::mapped) << "nuvec mapped it already; other readers choked";
  EXPECT_EQ(nuvec_test::read_file(path), saved_bytes(dir_, nuvec_test::views_of(tensors), {{"format", "pt"}}));
  EXPECT_EQ(result.files[0].bytes_after, std::filesystem::file_size(path));
  EXPECT_EQ(entries(dir_.path()), 1u);
}

TEST_F(SafetensorsAlign, AFileWithBytesNoTensorCoversIsRewrittenWithoutThem) {
  // Two F32 tensors with 4 bytes between them: nuvec reads it, the reference reader refuses it.
  const auto a = random_tensor("a", DType::F32, {1}, 1), b = random_tensor("b", DType::F32, {1}, 2);
  std::vector<std::byte> data = a.bytes;
  data.resize(8);
  data.insert(data.end(), b.bytes.begin(), b.bytes.end());
  const std::string json = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  const auto path = dir_ / "gap.safetensors";
  nuvec_test::write_file(path, nuvec_test::safetensors_bytes(json + std::string(8 - json.size() % 8, ' '), data));
  const auto result = nuvec::io::align_checkpoint(path);
  ASSERT_EQ(result.files.size(), 1u);
  ASSERT_EQ(result.files[0].reasons.size(), 1u);
  EXPECT_NE(result.files[0].reasons[0].find("4 bytes of its data belong to no tensor"), std::string::npos)
      << result.files[0].reasons[0];
  EXPECT_EQ(nuvec_test::read_file(path), saved_bytes(dir_, nuvec_test::views_of({a, b}), {}));
}

// --- sharded checkpoints ------------------------------------------------------------

class SafetensorsAlignSharded : public SafetensorsAlign {
 protected:
  // Three shards: nuvec's old padded layout, MLX's unpadded one, and one
  // already in the reference layout; the index lists one old padding tensor.
  void SetUp() override {
    first_ = awkward_tensors("a.");
    second_ = {random_tensor("b.w", DType::F16, {9, 3}, 11), random_tensor("b.flag", DType::BOOL, {3}, 12),
               random_tensor("b.x", DType::F32, {5}, 13)};
    third_ = {random_tensor("c.w", DType::BF16, {4, 4}, 21)};
    nuvec_test::write_file(dir_ / "model-00001-of-00003.safetensors", nuvec_test::old_padded_file(first_, {{"format", "pt"}}));
    nuvec_test::write_file(dir_ / "model-00002-of-00003.safetensors", nuvec_test::unpadded_file(second_, {{"format", "mlx"}}));
    nuvec::io::save_safetensors(dir_ / "model-00003-of-00003.safetensors", nuvec_test::views_of(third_));
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", 1234}};
    auto& map = index["weight_map"];
    for (const auto& t : first_) map[t.name] = "model-00001-of-00003.safetensors";
    map["__nuvec_padding_462__"] = "model-00001-of-00003.safetensors";  // as a tool that copied header keys
    for (const auto& t : second_) map[t.name] = "model-00002-of-00003.safetensors";
    for (const auto& t : third_) map[t.name] = "model-00003-of-00003.safetensors";
    nuvec_test::write_file(index_path(), index.dump(2) + "\n");
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) originals_[e.path()] = nuvec_test::read_file(e.path());
  }

  std::filesystem::path index_path() const { return dir_ / "model.safetensors.index.json"; }
  std::filesystem::path shard(int i) const { return dir_ / ("model-0000" + std::to_string(i) + "-of-00003.safetensors"); }

  std::vector<TestTensor> all() const {
    std::vector<TestTensor> v = first_;
    v.insert(v.end(), second_.begin(), second_.end());
    v.insert(v.end(), third_.begin(), third_.end());
    return v;
  }

  void expect_untouched() const {
    for (const auto& [path, bytes] : originals_) EXPECT_EQ(nuvec_test::read_file(path), bytes) << path;
    EXPECT_EQ(entries(dir_.path()), originals_.size()) << "no temporary left";
  }

  std::vector<TestTensor> first_, second_, third_;
  std::map<std::filesystem::path, std::vector<std::byte>> originals_;
};

TEST_F(SafetensorsAlignSharded, DryRunSaysWhichFilesWouldChangeAndWhatLoadingWouldCostThenWritesNothing) {
  for (const auto& target : {dir_.path(), index_path()}) {  // a model directory or the index itself
    const auto plan = nuvec::io::align_checkpoint(target, {.dry_run = true});
    expect_untouched();
    EXPECT_TRUE(plan.dry_run);
    ASSERT_EQ(plan.files.size(), 3u);
    EXPECT_EQ(plan.changed_files(), 3u) << "two shards and the index";

    const auto& padded = plan.files[0];
    EXPECT_EQ(padded.path, shard(1));
    EXPECT_TRUE(padded.changes());
    EXPECT_EQ(padded.load_before, LoadPath::mapped);
    EXPECT_LT(padded.bytes_after, padded.bytes_before);

    const auto& mlx = plan.files[1];
    EXPECT_TRUE(mlx.changes());
    ASSERT_FALSE(mlx.reasons.empty());
    EXPECT_NE(mlx.reasons[0].find("loading reads a copy"), std::string::npos) << mlx.reasons[0];
    EXPECT_EQ(mlx.load_before, LoadPath::read);
    EXPECT_GT(mlx.before.active, 0u);
    EXPECT_EQ(mlx.before, nuvec::io::footprint(shard(2)));
    EXPECT_EQ(mlx.load_after, LoadPath::mapped);
    EXPECT_EQ(mlx.after.active, 0u);

    EXPECT_FALSE(plan.files[2].changes());
    ASSERT_TRUE(plan.index.has_value());
    EXPECT_TRUE(plan.index->changes());
    ASSERT_FALSE(plan.index->reasons.empty());
    EXPECT_NE(plan.index->reasons[0].find("1 __nuvec_padding_*"), std::string::npos) << plan.index->reasons[0];
  }
}

TEST_F(SafetensorsAlignSharded, AlignRewritesEveryShardThatNeedsItAndTheIndexAsTheDryRunSaid) {
  EXPECT_THROW(nuvec::io::load_safetensors(*device_, dir_.path()), nuvec::FormatError)
      << "nuvec hides the padding tensor the index lists, so it refuses the index";
  const auto plan = nuvec::io::align_checkpoint(dir_.path(), {.dry_run = true});
  const ino_t third = inode(shard(3));
  const auto done = nuvec::io::align_checkpoint(dir_.path());
  EXPECT_FALSE(done.dry_run);
  EXPECT_EQ(done.changed_files(), 3u);
  for (std::size_t i = 0; i < plan.files.size(); ++i) {
    EXPECT_EQ(done.files[i].reasons, plan.files[i].reasons);
    // What the dry run predicted is what loading the rewritten file costs.
    EXPECT_EQ(plan.files[i].after, nuvec::io::footprint(plan.files[i].path)) << plan.files[i].path;
    EXPECT_EQ(plan.files[i].bytes_after, std::filesystem::file_size(plan.files[i].path)) << plan.files[i].path;
  }
  EXPECT_EQ(inode(shard(3)), third) << "the shard already aligned is left as it is";
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(padding_names(raw_names(shard(i))), 0u);

  const auto index = nlohmann::ordered_json::parse(nuvec_test::read_file_text(index_path()));
  EXPECT_FALSE(index["weight_map"].contains("__nuvec_padding_462__"));
  EXPECT_EQ(index["weight_map"].size(), all().size());
  EXPECT_EQ(index["metadata"]["total_size"], 1234) << "the rest of the index is kept";
  EXPECT_EQ(index["weight_map"].begin().key(), "a.embed") << "in its order";

  const auto loaded = nuvec::io::load_safetensors(*device_, dir_.path());
  nuvec_test::expect_tensors(loaded, all());
  for (const auto& s : loaded.sources()) EXPECT_EQ(s.load_path, LoadPath::mapped) << s.path;
  EXPECT_EQ(device_->memory().active, 0u);
  EXPECT_EQ(entries(dir_.path()), originals_.size()) << "no temporary left";
  EXPECT_EQ(nuvec::io::align_checkpoint(dir_.path()).changed_files(), 0u) << "a second run changes nothing";
}

TEST_F(SafetensorsAlignSharded, ABrokenShardStopsTheRunBeforeAnythingIsWritten) {
  // The last shard is truncated: the first two would need rewriting, but
  // every file is checked before any is written.
  auto bytes = originals_.at(shard(3));
  bytes.resize(bytes.size() - 1);
  nuvec_test::write_file(shard(3), bytes);
  originals_[shard(3)] = bytes;
  EXPECT_THROW(nuvec::io::align_checkpoint(dir_.path()), nuvec::FormatError);
  expect_untouched();
}

// A real failure part-way through writing a shard: the file-size limit
// (RLIMIT_FSIZE) lets the small first shard be written but not the second,
// whose temporary file hits it mid-way (EFBIG).
TEST_F(SafetensorsAlignSharded, AFailureMidWayLeavesThatShardAndTheRestAsTheyWere) {
  second_.push_back(random_tensor("b.big", DType::F32, {200'000}, 14));  // 800 KB, over the limit below
  nuvec_test::write_file(shard(2), nuvec_test::unpadded_file(second_, {{"format", "mlx"}}));
  auto index = nlohmann::ordered_json::parse(nuvec_test::read_file_text(index_path()));
  index["weight_map"]["b.big"] = "model-00002-of-00003.safetensors";
  nuvec_test::write_file(index_path(), index.dump(2) + "\n");
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) originals_[e.path()] = nuvec_test::read_file(e.path());

  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto previous = ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
  rlimit limited = saved;
  limited.rlim_cur = 256 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  bool threw = false;
  try {
    nuvec::io::align_checkpoint(dir_.path());
  } catch (const nuvec::IoError& e) {
    threw = true;
    EXPECT_NE(std::string(e.what()).find("model-00002-of-00003.safetensors"), std::string::npos) << e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, previous);
  ASSERT_TRUE(threw) << "the second shard's write should have failed";

  // The first shard was rewritten (same tensors, reference layout); the
  // failed one and everything after it, the index too, are the originals.
  EXPECT_EQ(padding_names(raw_names(shard(1))), 0u);
  for (const auto& path : {shard(2), shard(3), index_path()}) EXPECT_EQ(nuvec_test::read_file(path), originals_.at(path)) << path;
  EXPECT_EQ(entries(dir_.path()), originals_.size()) << "no temporary left";
  // And a second run finishes the job.
  EXPECT_EQ(nuvec::io::align_checkpoint(dir_.path()).changed_files(), 2u) << "the second shard and the index";
  nuvec_test::expect_tensors(nuvec::io::load_safetensors(*device_, dir_.path()), all());
}

}  // namespace
