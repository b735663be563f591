// parse_gguf on well-formed files: every value type round trips, tensor
// infos carry their ggml type, shape and size, the data starts at the
// file's alignment; and the ggml type table holds ggml.c's numbers.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf/gguf_builder.h"
#include "nuvec/error.h"
#include "nuvec/io/gguf.h"

namespace {

using nuvec::io::DType;
using nuvec::io::GgmlType;
using nuvec::io::GgufArray;
using nuvec::io::GgufFile;
using nuvec::io::GgufValue;
using nuvec::io::GgufValueType;
using nuvec::io::parse_gguf;
using nuvec_test::GgufBuilder;

GgufFile parse(const std::vector<std::byte>& file) { return parse_gguf(file, file.size(), "model.gguf"); }

TEST(GgufParse, EveryValueTypeRoundTrips) {
  const std::vector<std::pair<std::string, GgufValue>> values = {
      {"u8", std::uint8_t{200}},
      {"i8", std::int8_t{-100}},
      {"u16", std::uint16_t{60000}},
      {"i16", std::int16_t{-30000}},
      {"u32", std::uint32_t{4000000000u}},
      {"i32", std::int32_t{-2000000000}},
      {"f32", 1.5f},
      {"bool", true},
      {"string", std::string("llama")},
      {"empty string", std::string()},
      {"u64", std::uint64_t{1} << 60},
      {"i64", std::int64_t{-1} << 60},
      {"f64", -0.125},
      {"tokens", GgufArray{std::vector<std::string>{"<s>", "</s>", ""}}},
      {"scores", GgufArray{std::vector<float>{0.5f, -1.0f}}},
      {"flags", GgufArray{std::vector<bool>{true, false, true}}},
      {"empty", GgufArray{std::vector<std::int64_t>{}}},
      {"nested", GgufArray{std::vector<GgufArray>{GgufArray{std::vector<std::uint8_t>{1, 2}},
                                                   GgufArray{std::vector<std::string>{"a"}},
                                                   GgufArray{std::vector<GgufArray>{}}}}},
  };
  GgufBuilder builder;
  for (const auto& [key, value] : values) builder.kv(key, value);
  const GgufFile file = parse(builder.build());
  EXPECT_EQ(file.version, 3u);
  ASSERT_EQ(file.metadata.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(file.metadata[i].key, values[i].first);
    EXPECT_TRUE(file.metadata[i].value == values[i].second) << values[i].first;
  }
  ASSERT_NE(file.find("tokens"), nullptr);
  EXPECT_EQ(nuvec::io::gguf_value_type(*file.find("tokens")), GgufValueType::ARRAY);
  EXPECT_EQ(std::get<GgufArray>(*file.find("tokens")).element_type(), GgufValueType::STRING);
  EXPECT_EQ(std::get<GgufArray>(*file.find("nested")).size(), 3u);
  EXPECT_EQ(file.find("missing"), nullptr);
  EXPECT_TRUE(file.tensors.empty());
}

TEST(GgufParse, ReadsVersion2WhichHasTheSameLayout) {
  GgufBuilder builder;
  builder.version = 2;
  builder.kv("general.name", std::string("v2"));
  EXPECT_EQ(parse(builder.build()).version, 2u);
}

TEST(GgufParse, TensorInfosCarryTypeShapeAndSize) {
  GgufBuilder builder;
  builder.kv("general.architecture", std::string("llama"));
  builder.tensor("token_embd.weight", {64, 3}, 2, std::vector<std::byte>(3 * 2 * 18));  // Q4_0
  builder.tensor("output_norm.weight", {64}, 0, std::vector<std::byte>(256));             // F32
  builder.tensor("blk.0.attn_q.weight", {256, 2}, 12, std::vector<std::byte>(2 * 144));   // Q4_K
  const GgufFile file = parse(builder.build());
  ASSERT_EQ(file.tensors.size(), 3u);

  const auto& q4 = file.tensors[0];
  EXPECT_EQ(q4.name, "token_embd.weight");
  EXPECT_EQ(q4.dims, (std::vector<std::uint64_t>{64, 3}));
  EXPECT_EQ(q4.shape(), (std::vector<std::uint64_t>{3, 64}));
  EXPECT_EQ(q4.type.name, "Q4_0");
  EXPECT_EQ(q4.type.dtype, DType::GGML_BLOCK);
  EXPECT_TRUE(q4.type.quantized());
  EXPECT_EQ(q4.bytes, 3u * 2 * 18);
  EXPECT_EQ(q4.offset, 0u);

  const auto& f32 = file.tensors[1];
  EXPECT_EQ(f32.type.dtype, DType::F32);
  EXPECT_FALSE(f32.type.quantized());
  EXPECT_EQ(f32.bytes, 256u);
  EXPECT_EQ(f32.offset, 128u);  // 108 bytes of Q4_0 padded to 32

  EXPECT_EQ(file.tensors[2].bytes, 288u);
  EXPECT_EQ(file.alignment, 32u);
  EXPECT_EQ(file.data_offset % 32, 0u);
}

TEST(GgufParse, TheDataStartsAtTheFilesAlignment) {
  GgufBuilder builder;
  builder.alignment(256);
  builder.tensor("a", {8}, 0, std::vector<std::byte>(32));
  builder.tensor("b", {8}, 0, std::vector<std::byte>(32));
  const GgufFile file = parse(builder.build());
  EXPECT_EQ(file.alignment, 256u);
  EXPECT_EQ(file.data_offset, 256u);
  EXPECT_EQ(file.tensors[1].offset, 256u);
}

TEST(GgufParse, EmptyTensorsAndScalarsAreAllowed) {
  GgufBuilder builder;
  builder.tensor("empty", {0, 4}, 0, {});
  builder.tensor("scalar", {}, 0, std::vector<std::byte>(4));
  const GgufFile file = parse(builder.build());
  EXPECT_EQ(file.tensors[0].bytes, 0u);
  EXPECT_EQ(file.tensors[1].bytes, 4u);
  EXPECT_TRUE(file.tensors[1].shape().empty());
}

TEST(GgufParse, GgmlTypesHoldGgmlsBlockSizes) {
  struct Expected {
    std::uint32_t id;
    const char* name;
    std::uint32_t block_size, type_size;
    DType dtype;
  };
  for (const Expected& e : std::vector<Expected>{{0, "F32", 1, 4, DType::F32},
                                                 {1, "F16", 1, 2, DType::F16},
                                                 {2, "Q4_0", 32, 18, DType::GGML_BLOCK},
                                                 {3, "Q4_1", 32, 20, DType::GGML_BLOCK},
                                                 {6, "Q5_0", 32, 22, DType::GGML_BLOCK},
                                                 {7, "Q5_1", 32, 24, DType::GGML_BLOCK},
                                                 {8, "Q8_0", 32, 34, DType::GGML_BLOCK},
                                                 {9, "Q8_1", 32, 36, DType::GGML_BLOCK},
                                                 {10, "Q2_K", 256, 84, DType::GGML_BLOCK},
                                                 {11, "Q3_K", 256, 110, DType::GGML_BLOCK},
                                                 {12, "Q4_K", 256, 144, DType::GGML_BLOCK},
                                                 {13, "Q5_K", 256, 176, DType::GGML_BLOCK},
                                                 {14, "Q6_K", 256, 210, DType::GGML_BLOCK},
                                                 {15, "Q8_K", 256, 292, DType::GGML_BLOCK},
                                                 {16, "IQ2_XXS", 256, 66, DType::GGML_BLOCK},
                                                 {19, "IQ1_S", 256, 50, DType::GGML_BLOCK},
                                                 {20, "IQ4_NL", 32, 18, DType::GGML_BLOCK},
                                                 {23, "IQ4_XS", 256, 136, DType::GGML_BLOCK},
                                                 {24, "I8", 1, 1, DType::I8},
                                                 {25, "I16", 1, 2, DType::I16},
                                                 {26, "I32", 1, 4, DType::I32},
                                                 {27, "I64", 1, 8, DType::I64},
                                                 {28, "F64", 1, 8, DType::F64},
                                                 {29, "IQ1_M", 256, 56, DType::GGML_BLOCK},
                                                 {30, "BF16", 1, 2, DType::BF16},
                                                 {34, "TQ1_0", 256, 54, DType::GGML_BLOCK},
                                                 {35, "TQ2_0", 256, 66, DType::GGML_BLOCK},
                                                 {39, "MXFP4", 32, 17, DType::GGML_BLOCK}}) {
    const std::optional<GgmlType> t = nuvec::io::ggml_type(e.id);
    ASSERT_TRUE(t.has_value()) << e.name;
    EXPECT_EQ(t->id, e.id);
    EXPECT_EQ(t->name, e.name);
    EXPECT_EQ(t->block_size, e.block_size) << e.name;
    EXPECT_EQ(t->type_size, e.type_size) << e.name;
    EXPECT_EQ(t->dtype, e.dtype) << e.name;
  }
  for (std::uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u}) {
    EXPECT_FALSE(nuvec::io::ggml_type(removed).has_value()) << removed;
  }
}

TEST(GgufParse, AsksForTheWholeHeaderWhenGivenLess) {
  GgufBuilder builder;
  builder.kv("general.name", std::string(100, 'x'));
  const auto file = builder.build();
  EXPECT_THROW(parse_gguf(std::span(file).first(40), file.size(), "model.gguf"), nuvec::InvalidArgument);
}

}  // namespace
