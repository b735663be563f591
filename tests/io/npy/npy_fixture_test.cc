// Files laid out byte for byte as numpy.save writes them (fixtures/, made by
// make_fixtures.py and checked against numpy): every dtype, byte order and
// version loads with the values, shape and dtype numpy would give.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/nuvec.h"
#include "nuvec/io/npy.h"

namespace {

using nuvec::io::DType;
using nuvec::io::load_npy;
using nuvec::io::TensorView;
using Shape = std::vector<std::uint64_t>;

const std::filesystem::path kNpyFixtures = NUVEC_NPY_FIXTURES;

class NpyFixture : public ::testing::Test {
 protected:
  void SetUp() override { device_ = std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), false); }

  // Loads fixtures/<name>.npy and checks its dtype, shape and values.
  template <class T>
  void expect_fixture(const char* name, DType dtype, const Shape& shape, const std::vector<T>& values,
                      bool mapped) {
    SCOPED_TRACE(name);
    const TensorView view = load_npy(*device_, kNpyFixtures / (std::string(name) + ".npy"));
    EXPECT_EQ(view.name, name);
    EXPECT_EQ(view.dtype, dtype);
    EXPECT_EQ(view.shape, shape);
    ASSERT_EQ(view.bytes.size(), values.size() * sizeof(T));
    std::vector<T> got(values.size());
    if (!got.empty()) std::memcpy(got.data(), view.bytes.data(), view.bytes.size());
    EXPECT_EQ(got, values);
    EXPECT_EQ(device_->memory().mapped != 0, mapped) << "mapped only when native and aligned";
  }

  std::unique_ptr<nuvec::Device> device_;
};

TEST_F(NpyFixture, Floats) {
  expect_fixture<float>("f4_3x4", DType::F32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, true);
  expect_fixture<double>("f8_v2", DType::F64, {2}, {1.5, -2.25}, true);
  expect_fixture<std::uint16_t>("f2_2", DType::F16, {2}, {0x3c00, 0xb800}, true);  // 1.0, -0.5
  // No bytes: nothing mapped or allocated (as for an empty safetensors or GGUF file).
  expect_fixture<std::uint16_t>("f2_empty", DType::F16, {0, 3}, {}, false);
}

TEST_F(NpyFixture, Integers) {
  expect_fixture<std::int8_t>("i1_4", DType::I8, {4}, {-128, -1, 0, 127}, true);
  expect_fixture<std::uint8_t>("u1_scalar", DType::U8, {}, {7}, true);
  expect_fixture<std::uint16_t>("u2_v3", DType::U16, {2, 2}, {1, 2, 3, 65535}, true);
  expect_fixture<std::int32_t>("i4_2x1x2", DType::I32, {2, 1, 2}, {-1, 2, -3, 4}, true);
  expect_fixture<std::uint64_t>("u8_2", DType::U64, {2}, {0, UINT64_MAX}, true);
}

TEST_F(NpyFixture, BigEndianIntegers) {
  expect_fixture<std::int16_t>("i2_be_3", DType::I16, {3}, {-2, 258, 32767}, false);
  expect_fixture<std::uint32_t>("u4_be_2", DType::U32, {2}, {1, 0xDEADBEEF}, false);
  expect_fixture<std::int64_t>("i8_be_5", DType::I64, {5}, {1, -2, 3, -4, 5}, false);
}

TEST_F(NpyFixture, BoolAndComplex) {
  expect_fixture<std::uint8_t>("b1_2x2", DType::BOOL, {2, 2}, {1, 0, 0, 1}, true);
  expect_fixture<std::complex<float>>("c8_3", DType::C64, {3}, {{1, 2}, {-3.5f, 0.25f}, {0, 0}}, true);
  expect_fixture<std::complex<float>>("c8_be_2", DType::C64, {2}, {{1, 2}, {3, -4}}, false);
}

TEST_F(NpyFixture, FortranOrderIsRefusedOrTransposed) {
  const auto path = kNpyFixtures / "f4_fortran_2x3.npy";
  EXPECT_THROW(load_npy(*device_, path), nuvec::FormatError);
  const TensorView view = load_npy(*device_, path, nuvec::io::FortranOrder::load_transposed);
  EXPECT_EQ(view.shape, (Shape{3, 2}));
  std::vector<float> got(6);
  std::memcpy(got.data(), view.bytes.data(), 24);
  EXPECT_EQ(got, (std::vector<float>{0, 3, 1, 4, 2, 5}));  // a.T of a = [[0, 1, 2], [3, 4, 5]]
}

}  // namespace
