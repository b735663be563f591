// Hostile headers: each flaw is a FormatError naming the file, the byte
// offset and the reason, from the parser, from a load and from a footprint;
// none changes a statistic.
#include <gtest/gtest.h>

#include <string>

#include "io/safetensors/load_plan.h"
#include "io/safetensors/safetensors_test_support.h"
#include "nuvec/io/footprint.h"
#include "nuvec/io/safetensors.h"
#include "support/temp_file.h"

namespace {

using nuvec_test::safetensors_bytes;
using nuvec_test::TempFile;

std::vector<std::byte> zeros(std::size_t n) { return std::vector<std::byte>(n); }

// The file offset of `needle` in a header whose JSON is `json`.
std::uint64_t at(std::string_view json, std::string_view needle, std::size_t occurrence = 0) {
  std::size_t pos = json.find(needle);
  while (occurrence-- > 0 && pos != std::string_view::npos) pos = json.find(needle, pos + 1);
  EXPECT_NE(pos, std::string_view::npos) << needle << " is not in " << json;
  return 8 + pos;
}

class SafetensorsHostile : public ::testing::Test {
 protected:
  // The file `bytes` must be refused at `offset` for `reason` by the parser,
  // a load and a footprint, with the device's statistics unchanged.
  void expect_refused(const std::vector<std::byte>& bytes, std::uint64_t offset, std::string_view reason) {
    const TempFile file(bytes);
    nuvec::Device& dev = *device_;
    nuvec_test::expect_format_error(
        dev, [&] { nuvec::io::parse_safetensors_header(bytes, bytes.size(), file.path()); }, file.path(), offset,
        reason);
    nuvec_test::expect_format_error(
        dev, [&] { nuvec::io::load_safetensors(dev, file.path()); }, file.path(), offset, reason);
    nuvec_test::expect_format_error(
        dev, [&] { nuvec::io::footprint(file.path()); }, file.path(), offset, reason);
  }
  void expect_refused(std::string_view json, std::size_t data_bytes, std::uint64_t offset, std::string_view reason) {
    expect_refused(safetensors_bytes(json, zeros(data_bytes)), offset, reason);
  }

  std::unique_ptr<nuvec::Device> device_ = nuvec_test::fresh_device();
};

// --- the length prefix --------------------------------------------------

TEST_F(SafetensorsHostile, EmptyFile) { expect_refused(std::vector<std::byte>{}, 0, "too short"); }

TEST_F(SafetensorsHostile, FileShorterThanTheLengthPrefix) { expect_refused(zeros(5), 0, "too short"); }

TEST_F(SafetensorsHostile, HeaderLengthPastTheEndOfTheFile) {
  expect_refused(safetensors_bytes(100, "{}"), 0, "runs past the end of the file");
}

TEST_F(SafetensorsHostile, HeaderLengthOverTheCap) {
  expect_refused(safetensors_bytes(100'000'001, "{}"), 0, "over the 100 MB limit");
  expect_refused(safetensors_bytes(~std::uint64_t{0}, "{}"), 0, "over the 100 MB limit");
}

TEST_F(SafetensorsHostile, EmptyHeader) { expect_refused(safetensors_bytes(0, ""), 8, "invalid JSON"); }

TEST_F(SafetensorsHostile, PrefixShorterThanTheHeaderIsRefusedByTheParser) {
  const auto bytes = safetensors_bytes("{}      ");
  try {
    nuvec::io::parse_safetensors_header(std::span(bytes).first(12), bytes.size(), "x.safetensors");
    ADD_FAILURE();
  } catch (const nuvec::FormatError& e) {
    EXPECT_EQ(e.offset(), 12u);
  }
}

// --- JSON -----------------------------------------------------------------

TEST_F(SafetensorsHostile, InvalidJson) {
  const std::string json = R"({"w": })";
  expect_refused(json, 0, at(json, "}"), "invalid JSON");
}

TEST_F(SafetensorsHostile, TrailingGarbageAfterTheObject) {
  const std::string json = R"({} x)";
  expect_refused(json, 0, at(json, "x"), "invalid JSON");
}

TEST_F(SafetensorsHostile, InvalidUtf8) {
  const std::string json = "{\"w\xff\":{}}";
  expect_refused(json, 0, at(json, "\xff"), "invalid JSON");
}

TEST_F(SafetensorsHostile, HeaderNotAnObject) {
  expect_refused("[1, 2]", 0, 8, "not a JSON object");
  expect_refused("  \"text\"", 0, 10, "not a JSON object");
  expect_refused("null", 0, 8, "not a JSON object");
}

TEST_F(SafetensorsHostile, EntryNotAnObject) {
  const std::string json = R"({"w": 5})";
  expect_refused(json, 0, at(json, "\"w\""), "entry \"w\" is a number, not an object");
}

TEST_F(SafetensorsHostile, MissingField) {
  const std::string json = R"({"w": {"dtype": "F32", "shape": [2]}})";
  expect_refused(json, 8, at(json, "\"w\""), "has no \"data_offsets\"");
}

TEST_F(SafetensorsHostile, DuplicateField) {
  const std::string json = R"({"w": {"dtype": "F32", "dtype": "F16", "shape": [2], "data_offsets": [0, 8]}})";
  expect_refused(json, 8, at(json, "\"dtype\"", 1), "duplicate field");
}

// --- dtype and shape -------------------------------------------------------

TEST_F(SafetensorsHostile, UnknownDtype) {
  const std::string json = R"({"w": {"dtype": "F7", "shape": [2], "data_offsets": [0, 8]}})";
  expect_refused(json, 8, at(json, "\"dtype\""), "unknown dtype \"F7\"");
}

TEST_F(SafetensorsHostile, DtypeNotAString) {
  const std::string json = R"({"w": {"dtype": 4, "shape": [2], "data_offsets": [0, 8]}})";
  expect_refused(json, 8, at(json, "\"dtype\""), "dtype is a number");
}

TEST_F(SafetensorsHostile, NegativeShape) {
  const std::string json = R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})";
  expect_refused(json, 8, at(json, "\"shape\""), "negative dimension");
}

TEST_F(SafetensorsHostile, NonIntegerShape) {
  const std::string json = R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 8]}})";
  expect_refused(json, 8, at(json, "\"shape\""), "not a 64-bit integer");
  const std::string huge = R"({"w": {"dtype": "F32", "shape": [18446744073709551616], "data_offsets": [0, 8]}})";
  expect_refused(huge, 8, at(huge, "\"shape\""), "not a 64-bit integer");
  const std::string text = R"({"w": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}})";
  expect_refused(text, 8, at(text, "\"shape\""), "holds a string");
}

TEST_F(SafetensorsHostile, ShapeWhoseElementCountOverflows) {
  const std::string json = R"({"w": {"dtype": "U8", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})";
  expect_refused(json, 8, at(json, "\"shape\""), "more elements than 64 bits can count");
}

TEST_F(SafetensorsHostile, ShapeWhoseByteSizeOverflows) {
  const std::string json = R"({"w": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 8]}})";
  expect_refused(json, 8, at(json, "\"shape\""), "more bytes than 64 bits can count");
}

TEST_F(SafetensorsHostile, ShapeWithTooManyDimensions) {
  std::string dims = "1";
  for (int i = 0; i < 64; ++i) dims += ",1";
  const std::string json = R"({"w": {"dtype": "U8", "shape": [)" + dims + R"(], "data_offsets": [0, 1]}})";
  expect_refused(json, 1, at(json, "\"shape\""), "more than 64 dimensions");
}

TEST_F(SafetensorsHostile, ByteSizeDiffersFromOffsets) {
  const std::string json = R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})";
  expect_refused(json, 8, at(json, "\"w\""), "is 8 bytes, but data_offsets [0, 4] hold 4");
}

// --- offsets ---------------------------------------------------------------

TEST_F(SafetensorsHostile, OffsetsPastTheData) {
  const std::string json = R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  expect_refused(json, 4, at(json, "\"data_offsets\""), "run past the data");
}

TEST_F(SafetensorsHostile, TruncatedData) {
  // A whole file, cut short: the last tensor's bytes are missing.
  const std::string json = R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},)"
                           R"( "b": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}})";
  auto bytes = safetensors_bytes(json, zeros(8));
  bytes.erase(bytes.end() - 3, bytes.end());
  expect_refused(bytes, at(json, "\"data_offsets\"", 1), "truncated");
}

TEST_F(SafetensorsHostile, ReversedOffsets) {
  const std::string json = R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": [8, 0]}})";
  expect_refused(json, 8, at(json, "\"data_offsets\""), "reversed");
}

TEST_F(SafetensorsHostile, OffsetsNotTwoIntegers) {
  const std::string three = R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1, 2]}})";
  expect_refused(three, 2, at(three, "\"data_offsets\""), "more than two offsets");
  const std::string one = R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0]}})";
  expect_refused(one, 2, at(one, "\"data_offsets\""), "does not hold two offsets");
  const std::string negative = R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [-1, 0]}})";
  expect_refused(negative, 2, at(negative, "\"data_offsets\""), "negative offset");
}

TEST_F(SafetensorsHostile, OverlappingTensors) {
  const std::string json = R"({"a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},)"
                           R"( "b": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]}})";
  expect_refused(json, 12, at(json, "\"b\""), "overlaps tensor \"a\"");
}

TEST_F(SafetensorsHostile, OverlapFoundWhateverTheHeaderOrder) {
  // "b" is listed first but lies inside "a": the later entry is named.
  const std::string json = R"({"b": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]},)"
                           R"( "a": {"dtype": "U8", "shape": [12], "data_offsets": [0, 12]}})";
  expect_refused(json, 12, at(json, "\"a\""), "overlaps tensor \"b\"");
}

TEST_F(SafetensorsHostile, DuplicateNames) {
  const std::string json = R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},)"
                           R"( "w": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}})";
  expect_refused(json, 8, at(json, "\"w\"", 1), "duplicate name \"w\"");
}

// --- __metadata__ ----------------------------------------------------------

TEST_F(SafetensorsHostile, MetadataNotAnObject) {
  const std::string json = R"({"__metadata__": [1]})";
  expect_refused(json, 0, at(json, "\"__metadata__\""), "__metadata__ is an array, not an object of strings");
}

TEST_F(SafetensorsHostile, MetadataValueNotAString) {
  const std::string json = R"({"__metadata__": {"format": "pt", "epoch": 3}})";
  expect_refused(json, 0, at(json, "\"epoch\""), "value for \"epoch\" is a number, not a string");
}

TEST_F(SafetensorsHostile, DuplicateMetadata) {
  const std::string twice = R"({"__metadata__": {}, "__metadata__": {}})";
  expect_refused(twice, 0, at(twice, "\"__metadata__\"", 1), "duplicate name");
  const std::string key = R"({"__metadata__": {"a": "1", "a": "2"}})";
  expect_refused(key, 0, at(key, "\"a\"", 1), "duplicate __metadata__ key");
}

// --- what is accepted --------------------------------------------------------

TEST_F(SafetensorsHostile, NullMetadataAsMlxWritesItIsEmpty) {
  const auto bytes = safetensors_bytes(R"({"__metadata__":null,"w":{"data_offsets":[0,2],"dtype":"U8","shape":[2]}})",
                                       zeros(2));
  const auto header = nuvec::io::parse_safetensors_header(bytes, bytes.size(), "mlx.safetensors");
  EXPECT_TRUE(header.metadata.empty());
  ASSERT_EQ(header.tensors.size(), 1u);
  EXPECT_EQ(header.tensors[0].name, "w");
}

TEST_F(SafetensorsHostile, UnknownFieldsAreSkippedHoweverDeep) {
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += "[{\"k\":";
  deep += "1";
  for (int i = 0; i < 10000; ++i) deep += "}]";
  const std::string json = R"({"w": {"extra": )" + deep + R"(, "dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})";
  const auto bytes = safetensors_bytes(json, zeros(1));
  const auto header = nuvec::io::parse_safetensors_header(bytes, bytes.size(), "deep.safetensors");
  ASSERT_EQ(header.tensors.size(), 1u);
  EXPECT_EQ(header.tensors[0].shape, std::vector<std::uint64_t>{1});
}

TEST_F(SafetensorsHostile, EscapedNamesAreReportedAtTheirOpeningQuote) {
  const std::string json = R"({"a\"b\\": {"dtype": "U8", "shape": [1], "data_offsets": [0, 2]}})";
  expect_refused(json, 2, 9, "\"a\\\"b\\\\\"");
}

TEST_F(SafetensorsHostile, ZeroSizedTensorsDoNotOverlap) {
  const auto bytes = safetensors_bytes(R"({"e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [2, 2]},)"
                                       R"( "w": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}})",
                                       zeros(4));
  const auto header = nuvec::io::parse_safetensors_header(bytes, bytes.size(), "empty.safetensors");
  EXPECT_EQ(header.tensors.size(), 2u);
}

// --- a file that changes between parsing and mapping -------------------------

// `json` followed by spaces until the data starts at `remainder` modulo 4.
std::string with_data_start(std::string json, std::size_t remainder) {
  while ((8 + json.size()) % 4 != remainder) json += ' ';
  return json;
}

TEST_F(SafetensorsHostile, FileThatChangesSizeBetweenParsingAndMappingIsRefused) {
  const std::string json = with_data_start(R"({"w": {"dtype": "F32", "shape": [1024], "data_offsets": [0, 4096]}})", 0);
  for (const bool shrink : {true, false}) {
    const TempFile file(safetensors_bytes(json, zeros(4096)));
    nuvec::io::safetensors_detail::CheckpointPlan plan =
        nuvec::io::safetensors_detail::plan_checkpoint(file.path(), {});
    ASSERT_EQ(plan.files[0].load_path(), nuvec::io::LoadPath::mapped);
    std::filesystem::resize_file(file.path(), shrink ? file.size() - 100 : file.size() + 100);
    const std::uint64_t offset = shrink ? file.size() - 100 : file.size();
    nuvec_test::expect_format_error(
        *device_, [&] { nuvec::io::safetensors_detail::load_planned(*device_, plan); }, file.path(), offset,
        "changed size");
  }
}

TEST_F(SafetensorsHostile, FileThatChangesSizeBeforeAnUnalignedReadIsRefused) {
  // The data starts at an odd offset: the F32 tensor is not aligned, so it is read.
  const std::string json = with_data_start(R"({"w":{"dtype":"F32","shape":[1024],"data_offsets":[0,4096]}})", 1);
  const TempFile file(safetensors_bytes(json, zeros(4096)));
  auto plan = nuvec::io::safetensors_detail::plan_checkpoint(file.path(), {});
  ASSERT_EQ(plan.files[0].load_path(), nuvec::io::LoadPath::read);
  std::filesystem::resize_file(file.path(), file.size() - 100);
  nuvec_test::expect_format_error(
      *device_, [&] { nuvec::io::safetensors_detail::load_planned(*device_, plan); }, file.path(), file.size() - 100,
      "changed size");
}

}  // namespace
