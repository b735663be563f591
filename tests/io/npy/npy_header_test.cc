// parse_npy_header: what numpy writes is read, and every hostile header is a
// FormatError naming the file, the byte offset and the reason.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/npy/npy_bytes.h"
#include "nuvec/error.h"
#include "nuvec/io/npy.h"

namespace {

using nuvec::FormatError;
using nuvec::io::DType;
using nuvec::io::NpyHeader;
using nuvec::io::parse_npy_header;
using nuvec_test::npy_dict;
using nuvec_test::npy_file;
using nuvec_test::to_bytes;

const std::filesystem::path kName = "hostile.npy";

NpyHeader parse(const std::vector<std::byte>& file) { return parse_npy_header(file, file.size(), kName); }

// Parsing `file` fails at `offset` with a reason that mentions `reason`.
void expect_refused(const std::vector<std::byte>& file, std::uint64_t offset, const std::string& reason) {
  try {
    parse(file);
    ADD_FAILURE() << "accepted; expected a FormatError about " << reason;
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), kName);
    EXPECT_EQ(e.offset(), offset) << e.what();
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hostile.npy: at byte " + std::to_string(offset)), std::string::npos)
        << e.what();
  }
}

std::vector<std::byte> floats(std::size_t n) { return std::vector<std::byte>(4 * n, std::byte{0}); }

// A file with this dict and the data its shape needs for one-byte elements.
std::vector<std::byte> with_dict(const std::string& dict, std::size_t data_bytes = 0) {
  return npy_file(dict, std::vector<std::byte>(data_bytes));
}

// The offset of `needle` in the file (to say where an error must point).
std::uint64_t offset_of(const std::vector<std::byte>& file, const std::string& needle) {
  const std::string text(reinterpret_cast<const char*>(file.data()), file.size());
  return text.find(needle);
}

TEST(NpyHeader, ReadsWhatNumpyWrites) {
  const auto file = npy_file(npy_dict("<f4", "(3, 4)"), floats(12));
  const NpyHeader h = parse(file);
  EXPECT_EQ(h.major_version, 1);
  EXPECT_EQ(h.minor_version, 0);
  EXPECT_EQ(h.dtype, DType::F32);
  EXPECT_FALSE(h.big_endian);
  EXPECT_FALSE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<std::uint64_t>{3, 4}));
  EXPECT_EQ(h.data_offset, 128u);  // a 59-byte dict after 10 bytes: padded to 128
  EXPECT_EQ(h.data_bytes, 48u);
}

TEST(NpyHeader, ReadsVersions2And3WithTheirLongerLength) {
  for (std::uint8_t major : {2, 3}) {
    const auto file = npy_file(npy_dict("<f8", "(2,)"), std::vector<std::byte>(16), major);
    const NpyHeader h = parse(file);
    EXPECT_EQ(h.major_version, major);
    EXPECT_EQ(h.dtype, DType::F64);
    EXPECT_EQ(h.data_offset, 128u);  // a 59-byte dict after 10 bytes: padded to 128
  }
}

TEST(NpyHeader, ReadsEveryDtypeAndByteOrder) {
  struct Case {
    const char* descr;
    DType dtype;
    bool big_endian;
  };
  for (const Case& c : std::vector<Case>{{"|b1", DType::BOOL, false}, {"|i1", DType::I8, false},
                                         {"|u1", DType::U8, false},   {"<i2", DType::I16, false},
                                         {">u2", DType::U16, true},   {"<i4", DType::I32, false},
                                         {">u4", DType::U32, true},   {"<i8", DType::I64, false},
                                         {"<u8", DType::U64, false},  {">f2", DType::F16, true},
                                         {"<f4", DType::F32, false},  {">f8", DType::F64, true},
                                         {"<c8", DType::C64, false},  {">c8", DType::C64, true},
                                         {">i1", DType::I8, false}}) {
    const auto size = nuvec::io::dtype_size(c.dtype);
    const NpyHeader h = parse(npy_file(npy_dict(c.descr, "(2,)"), std::vector<std::byte>(2 * size)));
    EXPECT_EQ(h.dtype, c.dtype) << c.descr;
    EXPECT_EQ(h.big_endian, c.big_endian) << c.descr;
  }
}

TEST(NpyHeader, ReadsScalarsEmptyArraysAndLooseButValidPython) {
  EXPECT_EQ(parse(with_dict(npy_dict("|u1", "()"), 1)).shape, std::vector<std::uint64_t>{});
  EXPECT_EQ(parse(with_dict(npy_dict("|u1", "(0, 5)"))).data_bytes, 0u);
  // Keys in another order, double quotes, no trailing commas, other spacing.
  const NpyHeader h =
      parse(with_dict("{\"shape\":(2,3),\"fortran_order\":True,\"descr\":\"|u1\"}", 6));
  EXPECT_TRUE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<std::uint64_t>{2, 3}));
}

TEST(NpyHeader, RefusesAnEmptyFile) { expect_refused({}, 0, "ends inside the npy preamble"); }

TEST(NpyHeader, RefusesAFileShorterThanThePreamble) {
  expect_refused(to_bytes("\x93NUMPY\x01"), 7, "ends inside the npy preamble");
  expect_refused(to_bytes(std::string("\x93NUMPY\x01\x00\x10", 9)), 9, "ends inside the npy preamble");
}

TEST(NpyHeader, RefusesBadMagic) {
  auto file = npy_file(npy_dict("<f4", "(1,)"), floats(1));
  file[3] = std::byte{'X'};
  expect_refused(file, 3, "not an npy file");
  expect_refused(to_bytes("PK\x03\x04"), 0, "not an npy file");
}

TEST(NpyHeader, RefusesUnsupportedVersions) {
  for (auto [major, minor] : std::vector<std::pair<int, int>>{{0, 0}, {1, 1}, {4, 0}, {255, 0}}) {
    auto file = npy_file(npy_dict("<f4", "(1,)"), floats(1));
    file[6] = std::byte(major);
    file[7] = std::byte(minor);
    expect_refused(file, 6, "unsupported npy format version");
  }
}

TEST(NpyHeader, RefusesAHeaderLengthPastTheEndOfTheFile) {
  auto file = nuvec_test::npy_preamble(1, 0, 200);
  nuvec_test::append(file, to_bytes(npy_dict("<f4", "()")));
  expect_refused(file, 8, "runs past the end of the file");
}

TEST(NpyHeader, RefusesAHeaderLengthOverTheCap) {
  auto file = nuvec_test::npy_preamble(2, 0, nuvec::io::kNpyMaxHeaderLength + 1);
  // The cap is checked before the file's size: no read is ever sized by it.
  expect_refused(file, 8, "over nuvec's cap");
}

TEST(NpyHeader, RefusesAHeaderThatIsNotADict) {
  expect_refused(with_dict("['descr', '<f4']"), 10, "must be a dict literal");
  expect_refused(with_dict(""), 64, "must be a dict literal");  // only padding: the header ends
}

TEST(NpyHeader, RefusesAMissingKey) {
  expect_refused(with_dict("{'descr': '|u1', 'fortran_order': False}"), 10, "no 'shape' key");
  expect_refused(with_dict("{'fortran_order': False, 'shape': (1,)}", 1), 10, "no 'descr' key");
  expect_refused(with_dict("{'descr': '|u1', 'shape': (1,)}", 1), 10, "no 'fortran_order' key");
}

TEST(NpyHeader, RefusesARepeatedKey) {
  const auto file = with_dict("{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (1,), }", 1);
  expect_refused(file, 27, "appears twice");
}

TEST(NpyHeader, RefusesAnUnknownKey) {
  const auto file = with_dict("{'descr': '|u1', 'fortran_order': False, 'shape': (1,), 'extra': 1}", 1);
  expect_refused(file, offset_of(file, "'extra'"), "unexpected key 'extra'");
}

TEST(NpyHeader, RefusesMalformedTokens) {
  const auto unterminated = with_dict("{'descr': '|u1, 'fortran_order': False, 'shape': (1,)}");
  expect_refused(unterminated, offset_of(unterminated, "fortran_order"), "expected ',' or '}'");
  const auto missing_colon = with_dict("{'descr' '|u1'}");
  expect_refused(missing_colon, 19, "expected ':'");
  const auto escape = with_dict("{'descr': '\\x3cf4', 'fortran_order': False, 'shape': (1,)}");
  expect_refused(escape, 21, "escapes");
  const auto trailing = with_dict(npy_dict("|u1", "(1,)") + " x", 1);
  expect_refused(trailing, offset_of(trailing, "x "), "after the header dict");
  const auto non_ascii = with_dict("{'descr': '|u\xc3\xa9'}");
  expect_refused(non_ascii, 23, "only printable ASCII");
}

TEST(NpyHeader, RefusesValuesOfTheWrongType) {
  const auto fortran = with_dict("{'descr': '|u1', 'fortran_order': 0, 'shape': (1,)}", 1);
  expect_refused(fortran, offset_of(fortran, "0,"), "True or False");
  const auto list_shape = with_dict("{'descr': '|u1', 'fortran_order': False, 'shape': [1]}", 1);
  expect_refused(list_shape, offset_of(list_shape, "[1]"), "must be a tuple");
  const auto int_shape = with_dict("{'descr': '|u1', 'fortran_order': False, 'shape': (1)}", 1);
  expect_refused(int_shape, offset_of(int_shape, ")}"), "not a tuple");
  const auto float_dim = with_dict("{'descr': '|u1', 'fortran_order': False, 'shape': (1.5,)}", 1);
  expect_refused(float_dim, offset_of(float_dim, ".5"), "expected ',' or ')'");
  const auto structured = with_dict("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (1,)}", 4);
  expect_refused(structured, offset_of(structured, "[("), "structured dtypes");
}

TEST(NpyHeader, RefusesUnknownDescr) {
  for (const char* descr : {"<c16", "<U8", "|O", "|f4", "=f4", "<f16", "<V2", "f4", "<"}) {
    const auto file = with_dict(npy_dict(descr, "(1,)"), 16);
    const std::string quoted = fmt::format("'{}'", descr);
    expect_refused(file, offset_of(file, quoted), "unsupported npy dtype");
  }
}

TEST(NpyHeader, RefusesNegativeDimensions) {
  const auto file = with_dict(npy_dict("|u1", "(2, -1)"));
  expect_refused(file, offset_of(file, "-1"), "negative dimension");
}

TEST(NpyHeader, RefusesADimensionThatOverflows) {
  const auto file = with_dict(npy_dict("|u1", "(9223372036854775808,)"));
  expect_refused(file, offset_of(file, "9223"), "dimension overflows");
  const auto leading_zero = with_dict(npy_dict("|u1", "(01,)"));
  expect_refused(leading_zero, offset_of(leading_zero, "01"), "leading zero");
}

TEST(NpyHeader, RefusesAShapeWhoseByteSizeOverflows) {
  const auto file = with_dict(npy_dict("<f4", "(4294967296, 4294967296)"));
  expect_refused(file, offset_of(file, "(4294"), "overflows 64 bits");
}

TEST(NpyHeader, RefusesTruncatedData) {
  const auto file = npy_file(npy_dict("<f4", "(3, 4)"), floats(11));
  expect_refused(file, file.size(), "the data is truncated");
}

TEST(NpyHeader, RefusesBytesAfterTheData) {
  const auto file = npy_file(npy_dict("<f4", "(3, 4)"), floats(13));
  expect_refused(file, 128 + 48, "4 bytes follow the data");
}

TEST(NpyHeader, AsksForTheWholeHeaderWhenGivenLess) {
  const auto file = npy_file(npy_dict("<f4", "(3, 4)"), floats(12));
  EXPECT_EQ(nuvec::io::npy_header_size(std::span(file).first(12), file.size(), kName), 128u);
  EXPECT_THROW(parse_npy_header(std::span(file).first(20), file.size(), kName), nuvec::InvalidArgument);
}

}  // namespace
