// parse_gguf on hostile files: each is a FormatError naming the file, the
// byte offset and the reason, and no count sizes anything before it is
// checked against the bytes left.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf/gguf_builder.h"
#include "nuvec/error.h"
#include "nuvec/io/gguf.h"

namespace {

using nuvec::FormatError;
using nuvec::io::GgufArray;
using nuvec::io::parse_gguf;
using nuvec_test::ByteWriter;
using nuvec_test::GgufBuilder;

constexpr std::uint64_t kPreamble = 24;  // "GGUF", version, two counts

void expect_refused(const std::vector<std::byte>& file, std::uint64_t offset, const std::string& reason,
                    std::uint64_t file_size = 0) {
  if (file_size == 0) file_size = file.size();
  try {
    parse_gguf(file, file_size, "hostile.gguf");
    ADD_FAILURE() << "accepted; expected a FormatError about " << reason;
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), "hostile.gguf");
    EXPECT_EQ(e.offset(), offset) << e.what();
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hostile.gguf: at byte " + std::to_string(offset)), std::string::npos)
        << e.what();
  }
}

// One key/value "k" whose value starts (with its type) at byte 33.
ByteWriter one_kv() { return std::move(ByteWriter{}.preamble(0, 1).str("k")); }
constexpr std::uint64_t kValueAt = kPreamble + 8 + 1;

// One tensor info "t": n_dims at 33, dims from 37.
constexpr std::uint64_t kNDimsAt = kPreamble + 8 + 1;
constexpr std::uint64_t kDimsAt = kNDimsAt + 4;

GgufBuilder one_tensor(std::vector<std::uint64_t> dims, std::uint32_t type, std::size_t bytes) {
  GgufBuilder b;
  b.tensor("t", std::move(dims), type, std::vector<std::byte>(bytes));
  return b;
}

TEST(GgufHostile, RefusesAnEmptyOrShortFile) {
  expect_refused({}, 0, "runs past the end of the file");
  expect_refused(ByteWriter{}.raw("GGU").bytes, 0, "runs past the end of the file");
  expect_refused(ByteWriter{}.raw("GGUF").u32(3).u32(0).bytes, 8, "tensor count");
  expect_refused(ByteWriter{}.raw("GGUF").u32(3).u64(0).bytes, 16, "key/value count");
}

TEST(GgufHostile, RefusesBadMagic) {
  expect_refused(ByteWriter{}.raw("GGML").u32(3).u64(0).u64(0).bytes, 0, "not a GGUF file");
}

TEST(GgufHostile, RefusesOtherVersions) {
  expect_refused(ByteWriter{}.preamble(0, 0, 1).bytes, 4, "version 1");
  expect_refused(ByteWriter{}.preamble(0, 0, 0x03000000).bytes, 4, "big-endian");
  expect_refused(ByteWriter{}.preamble(0, 0, 4).bytes, 4, "unsupported GGUF version 4");
}

TEST(GgufHostile, RefusesCountsPastTheEndOfTheFile) {
  expect_refused(ByteWriter{}.preamble(0, std::uint64_t{1} << 60).bytes, kPreamble, "key/values cannot fit");
  expect_refused(ByteWriter{}.preamble(std::uint64_t{1} << 60, 0).bytes, kPreamble, "tensor infos cannot fit");
  // A count that the file could hold only if every item were empty.
  expect_refused(ByteWriter{}.preamble(0, 2).str("k").u32(0).u8(1).bytes, kPreamble, "key/values cannot fit");
}

TEST(GgufHostile, RefusesStringLengthsPastTheEndOfTheFile) {
  expect_refused(ByteWriter{}.preamble(0, 1).u64(1000).raw("abc and some more").bytes, kPreamble,
                 "a string of 1000 bytes runs past the end");
  expect_refused(one_kv().u32(8).u64(std::uint64_t{1} << 40).bytes, kValueAt + 4, "runs past the end");
  expect_refused(one_kv().u32(8).u64(UINT64_MAX).bytes, kValueAt + 4, "runs past the end");
}

TEST(GgufHostile, RefusesArrayCountsPastTheEndOfTheFile) {
  const std::uint64_t elements_at = kValueAt + 4 + 4 + 8;
  for (std::uint32_t element_type : {0u, 4u, 7u, 8u, 9u, 12u}) {
    expect_refused(one_kv().u32(9).u32(element_type).u64(std::uint64_t{1} << 40).bytes, elements_at,
                   "cannot fit");
  }
  expect_refused(one_kv().u32(9).u32(8).u64(UINT64_MAX).bytes, elements_at, "cannot fit");
}

TEST(GgufHostile, RefusesUnknownValueTypes) {
  expect_refused(one_kv().u32(13).u8(0).bytes, kValueAt, "unknown GGUF value type 13");
  expect_refused(one_kv().u32(9).u32(0xffffffff).u64(0).bytes, kValueAt + 4, "unknown GGUF value type 4294967295");
}

TEST(GgufHostile, RefusesABoolThatIsNeither0Nor1) {
  expect_refused(one_kv().u32(7).u8(2).bytes, kValueAt + 4, "bool value 2");
  expect_refused(one_kv().u32(9).u32(7).u64(3).u8(1).u8(0).u8(255).bytes, kValueAt + 18, "bool value 255");
}

TEST(GgufHostile, RefusesArraysNestedTooDeep) {
  ByteWriter w = one_kv().u32(9);
  for (std::uint32_t depth = 1; depth <= nuvec::io::kGgufMaxArrayDepth; ++depth) w.u32(9).u64(1);
  w.u32(0).u64(0);
  expect_refused(w.bytes, kValueAt + 4 + 12 * nuvec::io::kGgufMaxArrayDepth, "nested deeper");
}

TEST(GgufHostile, RefusesARepeatedKey) {
  GgufBuilder b;
  b.kv("k", std::uint8_t{1}).kv("k", std::uint8_t{2});
  expect_refused(b.build(), kPreamble + 14, "the metadata key 'k' appears twice");
}

TEST(GgufHostile, RefusesAnAlignmentThatIsNotAPowerOfTwo) {
  const std::uint64_t value_at = kPreamble + 8 + 17;  // after the key "general.alignment"
  for (std::uint32_t bad : {0u, 3u, 48u, 0xffffffffu}) {
    GgufBuilder b;
    b.kv("general.alignment", bad);
    expect_refused(b.build(), value_at, "not a power of two");
  }
  GgufBuilder wide;
  wide.kv("general.alignment", std::uint64_t{64});
  expect_refused(wide.build(), value_at, "must be a uint32, not a uint64");
}

TEST(GgufHostile, RefusesUnknownGgmlTypes) {
  for (std::uint32_t type : {4u, 5u, 31u, 36u, 43u, 0xffffffffu}) {
    expect_refused(one_tensor({32}, type, 32).build(), kDimsAt + 8, "unknown ggml type " + std::to_string(type));
  }
}

TEST(GgufHostile, RefusesMoreThanFourDimensions) {
  expect_refused(one_tensor({1, 1, 1, 1, 1}, 0, 4).build(), kNDimsAt, "5 dimensions");
  expect_refused(ByteWriter{}.preamble(1, 0).str("t").u32(0xffffffff).u64(0).u64(0).bytes, kNDimsAt,
                 "4294967295 dimensions");
}

TEST(GgufHostile, RefusesNegativeDimensions) {
  expect_refused(one_tensor({4, std::uint64_t{1} << 63}, 0, 0).build(), kDimsAt + 8, "dimension 1 is negative");
}

TEST(GgufHostile, RefusesRowsThatAreNotWholeBlocks) {
  expect_refused(one_tensor({33, 2}, 2, 36).build(), kDimsAt, "not a whole number of Q4_0 blocks of 32");
  expect_refused(one_tensor({128}, 12, 144).build(), kDimsAt, "Q4_K blocks of 256");
  expect_refused(one_tensor({}, 8, 34).build(), kDimsAt, "Q8_0");  // a scalar is one element
}

TEST(GgufHostile, RefusesSizesThatOverflow) {
  expect_refused(one_tensor({std::uint64_t{1} << 32, std::uint64_t{1} << 32}, 0, 0).build(), kDimsAt,
                 "element count overflows");
  expect_refused(one_tensor({std::uint64_t{1} << 62}, 28, 0).build(), kDimsAt, "byte size overflows");
}

TEST(GgufHostile, RefusesOffsetsThatAreNotAligned) {
  GgufBuilder b = one_tensor({4}, 0, 16);
  b.tensors[0].offset = 16;
  expect_refused(b.build(), kDimsAt + 8 + 4, "offset 16 is not a multiple of the alignment 32");
}

TEST(GgufHostile, RefusesTensorsPastTheEndOfTheData) {
  GgufBuilder far = one_tensor({4}, 0, 0);  // the header says 16 bytes; none are written
  far.tensors[0].offset = std::uint64_t{1} << 40;
  expect_refused(far.build(), kDimsAt + 8 + 4, "run past its end");
  GgufBuilder wrapping = one_tensor({4}, 0, 0);
  wrapping.tensors[0].offset = UINT64_MAX - 31;
  expect_refused(wrapping.build(), kDimsAt + 8 + 4, "run past its end");
  auto truncated = one_tensor({64}, 0, 256).build();
  truncated.pop_back();
  expect_refused(truncated, kDimsAt + 8 + 4, "run past its end");
}

TEST(GgufHostile, RefusesOverlappingTensors) {
  GgufBuilder b;
  b.tensor("a", {16}, 0, std::vector<std::byte>(64));
  b.tensor("b", {16}, 0, std::vector<std::byte>(64));
  b.tensors[1].offset = 32;
  // b's offset field: infos at 24; "a" takes 8+1+4+8+4+8 = 33 bytes; then b's name, n_dims, dim, type.
  expect_refused(b.build(), kPreamble + 33 + 9 + 4 + 8 + 4, "tensor 'b' (data bytes [32, 96)) overlaps tensor 'a'");
  // Empty tensors share no bytes: these overlap nothing.
  GgufBuilder empty;
  empty.tensor("a", {16}, 0, std::vector<std::byte>(64)).tensor("e", {0}, 0, {});
  empty.tensors[1].offset = 0;
  EXPECT_NO_THROW(parse_gguf(empty.build(), empty.build().size(), "empty.gguf"));
}

TEST(GgufHostile, RefusesARepeatedTensorName) {
  GgufBuilder b;
  b.tensor("w", {4}, 0, std::vector<std::byte>(16)).tensor("w", {4}, 0, std::vector<std::byte>(16));
  expect_refused(b.build(), kPreamble + 33, "the tensor name 'w' appears twice");
}

TEST(GgufHostile, RefusesAHeaderOverTheCap) {
  // The file says it is 1 GiB; the header claims a key of 300 MiB.
  const auto prefix = ByteWriter{}.preamble(0, 1).u64(std::uint64_t{300} << 20).bytes;
  expect_refused(prefix, kPreamble + 8, "longer than nuvec's cap", std::uint64_t{1} << 30);
}

}  // namespace
