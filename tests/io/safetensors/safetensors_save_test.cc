// Saving: every tensor at a 256-byte boundary of the file, in a layout the
// reference reader accepts (it requires the tensors to cover the data with no
// gap), written atomically; align_safetensors rewrites a file that way.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include <nlohmann/json.hpp>

#include "io/safetensors/safetensors_test_support.h"
#include "nuvec/io/safetensors.h"

namespace {

using nuvec::io::DType;
using nuvec_test::random_tensor;
using nuvec_test::TempDir;
using nuvec_test::TestTensor;

// Tensors of awkward sizes: odd byte counts, a scalar, an empty one.
std::vector<TestTensor> awkward_tensors() {
  return {random_tensor("embed", DType::BF16, {33, 7}, 1), random_tensor("mask", DType::BOOL, {5}, 2),
          random_tensor("scale", DType::F32, {}, 3),       random_tensor("empty", DType::F16, {0, 4}, 4),
          random_tensor("ids", DType::I64, {3}, 5),        random_tensor("c", DType::C64, {2}, 6)};
}

struct RawEntry {
  std::string name;
  std::string dtype;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// The header as any JSON reader sees it, padding tensors included.
struct RawHeader {
  std::uint64_t length = 0;
  std::string json;
  std::vector<RawEntry> entries;
};

RawHeader raw_header(const std::vector<std::byte>& file) {
  RawHeader h;
  for (int i = 7; i >= 0; --i) h.length = (h.length << 8) | std::to_integer<std::uint64_t>(file[i]);
  h.json.assign(reinterpret_cast<const char*>(file.data()) + 8, h.length);
  const auto doc = nlohmann::json::parse(h.json);
  for (const auto& [name, value] : doc.items()) {
    if (name == "__metadata__") continue;
    h.entries.push_back({name, value["dtype"], value["data_offsets"][0], value["data_offsets"][1]});
  }
  return h;
}

// What the reference reader (Rust safetensors, under Python's safe_open)
// checks: tensors sorted by offsets cover [0, data length) with no gap.
void expect_reference_reader_accepts(const std::vector<std::byte>& file) {
  RawHeader h = raw_header(file);
  EXPECT_EQ(h.json.front(), '{');
  std::sort(h.entries.begin(), h.entries.end(),
            [](const RawEntry& a, const RawEntry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  std::uint64_t at = 0;
  for (const RawEntry& e : h.entries) {
    EXPECT_EQ(e.begin, at) << e.name << ": a gap or an overlap";
    at = e.end;
  }
  EXPECT_EQ(8 + h.length + at, file.size()) << "the tensors must end where the file does";
}

class SafetensorsSave : public ::testing::Test {
 protected:
  std::unique_ptr<nuvec::Device> device_ = nuvec_test::fresh_device();
  TempDir dir_;
};

TEST_F(SafetensorsSave, SaveThenLoadGivesIdenticalTensorsAndMetadata) {
  const auto tensors = awkward_tensors();
  const auto path = dir_ / "out.safetensors";
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "ünïcode \"quoted\""}};
  nuvec::io::save_safetensors(path, nuvec_test::views_of(tensors), metadata);
  const auto loaded = nuvec::io::load_safetensors(*device_, path);
  nuvec_test::expect_tensors(loaded, tensors);
  for (std::size_t i = 0; i < tensors.size(); ++i) EXPECT_EQ(loaded.tensors()[i].name, tensors[i].name);
  EXPECT_EQ(loaded.metadata(), metadata);
  EXPECT_EQ(loaded.sources()[0].load_path, nuvec::io::LoadPath::mapped);
}

TEST_F(SafetensorsSave, EveryTensorStartsAtA256ByteBoundaryOfTheFile) {
  const auto path = dir_ / "out.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(awkward_tensors()));
  const auto file = nuvec_test::read_file(path);
  const RawHeader raw = raw_header(file);
  EXPECT_EQ((8 + raw.length) % 256, 0u) << "the data starts at a boundary";
  for (const RawEntry& e : raw.entries) {
    if (e.name.starts_with("__nuvec_padding_")) continue;
    EXPECT_EQ(e.begin % 256, 0u) << e.name;
  }
  const auto header = nuvec::io::read_safetensors_header(path);
  EXPECT_TRUE(header.aligned());
  for (const auto& t : header.tensors) EXPECT_EQ((header.data_start + t.begin) % 256, 0u) << t.name;
}

TEST_F(SafetensorsSave, TheReferenceReaderAcceptsTheLayout) {
  const auto path = dir_ / "out.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(awkward_tensors()), {{"format", "pt"}});
  const auto file = nuvec_test::read_file(path);
  expect_reference_reader_accepts(file);
  const RawHeader raw = raw_header(file);
  EXPECT_EQ(raw.length % 8, 0u);
  EXPECT_TRUE(raw.json.starts_with(R"({"__metadata__":{"format":"pt"},"embed":{"dtype":"BF16","shape":[33,7],)"
                                   R"("data_offsets":[0,462]},"__nuvec_padding_462__":{"dtype":"U8","shape":[50],)"
                                   R"("data_offsets":[462,512]},"mask":)"))
      << raw.json;
}

TEST_F(SafetensorsSave, GapsAreDeclaredAsPaddingTensorsOfZerosThatTheParserLeavesOut) {
  const auto path = dir_ / "out.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(awkward_tensors()));
  const auto file = nuvec_test::read_file(path);
  const RawHeader raw = raw_header(file);
  std::size_t padding = 0;
  for (const RawEntry& e : raw.entries) {
    if (!e.name.starts_with("__nuvec_padding_")) continue;
    ++padding;
    EXPECT_EQ(e.dtype, "U8");
    for (std::uint64_t i = e.begin; i < e.end; ++i) EXPECT_EQ(file[8 + raw.length + i], std::byte{0});
  }
  EXPECT_EQ(padding, 4u) << "after embed, mask, scale and ids; not after the empty or the last tensor";
  EXPECT_EQ(nuvec::io::read_safetensors_header(path).tensors.size(), awkward_tensors().size());
}

TEST_F(SafetensorsSave, TensorsOfWholeBlocksNeedNoPadding) {
  const auto path = dir_ / "out.safetensors";
  const std::vector<TestTensor> tensors = {random_tensor("a", DType::F32, {64}, 1), random_tensor("b", DType::F16, {3}, 2)};
  nuvec::io::save_safetensors(path, nuvec_test::views_of(tensors));
  for (const RawEntry& e : raw_header(nuvec_test::read_file(path)).entries) {
    EXPECT_FALSE(e.name.starts_with("__nuvec_padding_")) << e.name;
  }
}

TEST_F(SafetensorsSave, EmptyCheckpoint) {
  const auto path = dir_ / "empty.safetensors";
  nuvec::io::save_safetensors(path, {});
  const auto file = nuvec_test::read_file(path);
  EXPECT_EQ(file.size(), 256u);
  const auto loaded = nuvec::io::load_safetensors(*device_, path);
  EXPECT_EQ(loaded.size(), 0u);
  EXPECT_EQ(device_->memory().mapped, 0u);
}

TEST_F(SafetensorsSave, RefusedInputsLeaveNoFile) {
  const auto path = dir_ / "out.safetensors";
  const auto ok = random_tensor("a", DType::F32, {2}, 1);
  auto short_bytes = ok;
  short_bytes.bytes.pop_back();
  const std::vector<std::vector<TestTensor>> refused = {
      {ok, ok},                                                   // a duplicate name
      {random_tensor("__metadata__", DType::U8, {1}, 2)},         // the reserved key
      {random_tensor("__nuvec_padding_3__", DType::U8, {1}, 2)},  // nuvec's padding names
      {random_tensor("bad\xff", DType::U8, {1}, 2)},              // not UTF-8
      {short_bytes},                                              // bytes that do not match the shape
  };
  for (const auto& tensors : refused) {
    EXPECT_THROW(nuvec::io::save_safetensors(path, nuvec_test::views_of(tensors)), nuvec::InvalidArgument);
  }
  EXPECT_THROW(nuvec::io::save_safetensors(path, nuvec_test::views_of({ok}), {{"k", "bad\xff"}}),
               nuvec::InvalidArgument);
  EXPECT_TRUE(std::filesystem::is_empty(dir_.path())) << "no file, no temporary left behind";
}

TEST_F(SafetensorsSave, SavingOverAMappedFileLeavesItsViewsIntact) {
  const auto path = dir_ / "out.safetensors";
  const auto before = random_tensor("w", DType::F32, {1024}, 1);
  const auto after = random_tensor("w", DType::F32, {1024}, 2);
  nuvec::io::save_safetensors(path, nuvec_test::views_of({before}));
  const auto old_load = nuvec::io::load_safetensors(*device_, path);
  nuvec::io::save_safetensors(path, nuvec_test::views_of({after}));  // renamed over, not written through
  EXPECT_EQ(nuvec_test::to_vector(old_load.at("w").bytes), before.bytes);
  nuvec_test::expect_tensors(nuvec::io::load_safetensors(*device_, path), {after});
}

// --- align ---------------------------------------------------------------------

TEST_F(SafetensorsSave, AlignRewritesAnUnalignedFile) {
  std::vector<TestTensor> tensors = awkward_tensors();
  tensors.push_back(random_tensor("big", DType::F32, {600000}, 7));  // more than one 8 MiB piece? no: 2.4 MB
  const auto in = dir_ / "mlx.safetensors";
  const auto out = dir_ / "aligned.safetensors";
  const auto original = nuvec_test::unpadded_file(tensors, {{"format", "mlx"}});
  nuvec_test::write_file(in, original);
  ASSERT_FALSE(nuvec::io::read_safetensors_header(in).aligned());

  nuvec::io::align_safetensors(in, out);
  EXPECT_EQ(nuvec_test::read_file(in), original) << "the input is untouched";
  const auto header = nuvec::io::read_safetensors_header(out);
  EXPECT_EQ(header.data_start % 256, 0u);
  for (const auto& t : header.tensors) EXPECT_EQ(t.begin % 256, 0u) << t.name;
  expect_reference_reader_accepts(nuvec_test::read_file(out));

  const auto loaded = nuvec::io::load_safetensors(*device_, out);
  EXPECT_EQ(loaded.sources()[0].load_path, nuvec::io::LoadPath::mapped);
  nuvec_test::expect_tensors(loaded, tensors);
  EXPECT_EQ(loaded.metadata().at("format"), "mlx");
}

TEST_F(SafetensorsSave, AlignInPlaceAndAgainChangesNothingMore) {
  const auto path = dir_ / "m.safetensors";
  const auto tensors = awkward_tensors();
  nuvec_test::write_file(path, nuvec_test::unpadded_file(tensors));
  nuvec::io::align_safetensors(path, path);
  const auto once = nuvec_test::read_file(path);
  nuvec::io::align_safetensors(path, path);
  EXPECT_EQ(nuvec_test::read_file(path), once);
  nuvec_test::expect_tensors(nuvec::io::load_safetensors(*device_, path), tensors);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.path()), {}), 1) << "no temporary left";
}

TEST_F(SafetensorsSave, AlignOfAHostileFileIsAFormatErrorAndWritesNothing) {
  const auto in = dir_ / "bad.safetensors";
  nuvec_test::write_file(in, nuvec_test::safetensors_bytes("{\"w\": 1}"));
  EXPECT_THROW(nuvec::io::align_safetensors(in, dir_ / "out.safetensors"), nuvec::FormatError);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.safetensors"));
}

}  // namespace
