// Saving: the reference writer's layout (Python's safetensors.torch.save_file
// and safetensors.numpy.save_file): tensors by descending dtype then name,
// back to back, the header padded with spaces to 8 bytes; so every tensor is
// aligned to its element size, nuvec maps the file without a copy, and other
// readers see exactly the tensors written. Written atomically.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include <nlohmann/json.hpp>

#include "io/safetensors/safetensors_test_support.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/memory.h"

namespace {

using nuvec::io::DType;
using nuvec_test::random_tensor;
using nuvec_test::TempDir;
using nuvec_test::TestTensor;

using nuvec_test::awkward_tensors;

struct RawEntry {
  std::string name;
  std::string dtype;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// The header as any JSON reader sees it, in the order it lists the tensors.
struct RawHeader {
  std::uint64_t length = 0;
  std::string json;
  std::vector<RawEntry> entries;
};

RawHeader raw_header(const std::vector<std::byte>& file) {
  RawHeader h;
  for (int i = 7; i >= 0; --i) h.length = (h.length << 8) | std::to_integer<std::uint64_t>(file[i]);
  h.json.assign(reinterpret_cast<const char*>(file.data()) + 8, h.length);
  const auto doc = nlohmann::ordered_json::parse(h.json);
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
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "ünïcode \"quoted\"\n\x01"}};
  nuvec::io::save_safetensors(path, nuvec_test::views_of(tensors), metadata);
  const auto loaded = nuvec::io::load_safetensors(*device_, path);
  nuvec_test::expect_tensors(loaded, tensors);
  EXPECT_EQ(loaded.metadata(), metadata);
  EXPECT_EQ(loaded.sources()[0].load_path, nuvec::io::LoadPath::mapped);
}

TEST_F(SafetensorsSave, TensorsAreOrderedAsTheReferenceWriterOrdersThem) {
  const auto path = dir_ / "out.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(awkward_tensors()));
  std::vector<std::string> names;
  for (const RawEntry& e : raw_header(nuvec_test::read_file(path)).entries) names.push_back(e.name);
  // I64, C64, F32, BF16, F16, BOOL: the Rust Dtype enum's order, descending.
  EXPECT_EQ(names, (std::vector<std::string>{"ids", "c", "scale", "embed", "empty", "mask"}));

  // Same dtype: by name, in byte order (uppercase before lowercase, as Rust's str).
  const std::vector<TestTensor> same = {random_tensor("b", DType::F32, {1}, 1), random_tensor("B", DType::F32, {1}, 2),
                                        random_tensor("a.10", DType::F32, {1}, 3),
                                        random_tensor("a.9", DType::F32, {1}, 4)};
  nuvec::io::save_safetensors(path, nuvec_test::views_of(same));
  names.clear();
  for (const RawEntry& e : raw_header(nuvec_test::read_file(path)).entries) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"B", "a.10", "a.9", "b"}));
}

TEST_F(SafetensorsSave, EveryTensorIsAlignedToItsElementWithNoGapAndNoExtraTensor) {
  const auto path = dir_ / "out.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(awkward_tensors()), {{"format", "pt"}});
  const auto file = nuvec_test::read_file(path);
  expect_reference_reader_accepts(file);
  const RawHeader raw = raw_header(file);
  EXPECT_EQ(raw.length % 8, 0u) << "the header is padded to 8 bytes";
  EXPECT_EQ(raw.entries.size(), awkward_tensors().size()) << "no tensor but those given";
  EXPECT_TRUE(raw.json.starts_with(R"({"__metadata__":{"format":"pt"},"ids":{"dtype":"I64","shape":[3],)"
                                   R"("data_offsets":[0,24]},"c":{"dtype":"C64","shape":[2],"data_offsets":[24,40]},)"))
      << raw.json;
  const std::string json = raw.json.substr(0, raw.json.find_last_not_of(' ') + 1);
  EXPECT_TRUE(json.ends_with(R"("empty":{"dtype":"F16","shape":[0,4],"data_offsets":[506,506]},)"
                             R"("mask":{"dtype":"BOOL","shape":[5],"data_offsets":[506,511]}})"))
      << json;
  EXPECT_LT(raw.length - json.size(), 8u) << "spaces only up to the next multiple of 8";
  const auto header = nuvec::io::read_safetensors_header(path);
  EXPECT_TRUE(header.aligned());
  for (const auto& t : header.tensors) {
    EXPECT_EQ((header.data_start + t.begin) % nuvec::io::dtype_size(t.dtype), 0u) << t.name;
  }
}

// The committed fixture is byte for byte what safetensors.torch.save_file
// writes (tools/interop/safetensors_interop.py checks that against the real
// one); saving its tensors, given in another order, must give those bytes.
TEST_F(SafetensorsSave, WritesTheReferenceWritersBytes) {
  const std::filesystem::path fixture = std::filesystem::path(NUVEC_SAFETENSORS_FIXTURES) / "pytorch_reference.safetensors";
  const auto reference = nuvec::io::load_safetensors(*device_, fixture);
  std::vector<nuvec::io::TensorView> shuffled(reference.tensors().rbegin(), reference.tensors().rend());
  const auto path = dir_ / "out.safetensors";
  nuvec::io::save_safetensors(path, shuffled, reference.metadata());
  EXPECT_EQ(nuvec_test::read_file(path), nuvec_test::read_file(fixture));
}

TEST_F(SafetensorsSave, TheSavedFileIsMappedWithoutACopy) {
  const std::vector<TestTensor> tensors = {random_tensor("w", DType::BF16, {301, 7}, 1),
                                           random_tensor("b", DType::F32, {13}, 2),
                                           random_tensor("n", DType::U8, {3}, 3),
                                           random_tensor("d", DType::F64, {5}, 4)};
  const auto path = dir_ / "out.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of(tensors));
  const auto loaded = nuvec::io::load_safetensors(*device_, path);
  const nuvec::MemoryStats stats = device_->memory();
  EXPECT_EQ(stats.active, 0u) << "nothing copied into a buffer";
  EXPECT_EQ(stats.mapped, nuvec::mapping_size(std::filesystem::file_size(path)));
  const std::byte* first = loaded.tensors().front().bytes.data();
  for (const auto& t : loaded.tensors()) {
    // Views of one mapping of the whole file, each at its offset in the file.
    const auto header = nuvec::io::read_safetensors_header(path);
    const auto it = std::find_if(header.tensors.begin(), header.tensors.end(),
                                 [&](const auto& h) { return h.name == t.name; });
    ASSERT_NE(it, header.tensors.end());
    EXPECT_EQ(t.bytes.data() - first, static_cast<std::ptrdiff_t>(it->begin - header.tensors.front().begin)) << t.name;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.bytes.data()) % nuvec::io::dtype_size(t.dtype), 0u) << t.name;
  }
  nuvec_test::expect_tensors(loaded, tensors);
}

TEST_F(SafetensorsSave, EmptyCheckpointIsTheReferenceWritersSixteenBytes) {
  const auto path = dir_ / "empty.safetensors";
  nuvec::io::save_safetensors(path, {});
  EXPECT_EQ(nuvec_test::read_file(path), nuvec_test::safetensors_bytes("{}      "));
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
      {random_tensor("__nuvec_padding_3__", DType::U8, {1}, 2)},  // names nuvec's reader hides
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

TEST_F(SafetensorsSave, RewritingInPlaceKeepsTheFilesPermissions) {
  const auto path = dir_ / "out.safetensors";
  nuvec::io::save_safetensors(path, nuvec_test::views_of({random_tensor("w", DType::F32, {4}, 1)}));
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::group_read);
  nuvec::io::save_safetensors(path, nuvec_test::views_of({random_tensor("w", DType::F32, {4}, 2)}));
  EXPECT_EQ(std::filesystem::status(path).permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::group_read);
}

}  // namespace
