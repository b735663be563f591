// load_npy: maps what it can, reads (and byte-swaps) what it must, and a
// refused file changes no statistic.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "io/npy/npy_bytes.h"
#include "nuvec/nuvec.h"
#include "nuvec/io/npy.h"
#include "support/stats_invariants.h"
#include "support/temp_file.h"

namespace {

using nuvec::MemoryStats;
using nuvec::io::DType;
using nuvec::io::FortranOrder;
using nuvec::io::TensorView;
using nuvec::io::load_npy;
using nuvec_test::npy_dict;
using nuvec_test::npy_file;
using nuvec_test::raw_bytes;
using nuvec_test::TempFile;

class NpyLoad : public ::testing::Test {
 protected:
  void SetUp() override { device_ = std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), false); }
  void TearDown() override { EXPECT_EQ(nuvec_test::invariant_violations(device_->memory()), ""); }

  std::unique_ptr<nuvec::Device> device_;
};

template <class T>
std::vector<T> values_of(const TensorView& view) {
  std::vector<T> out(view.bytes.size() / sizeof(T));
  std::memcpy(out.data(), view.bytes.data(), view.bytes.size());
  return out;
}

TEST_F(NpyLoad, MapsAnAlignedNativeFileWithoutCopying) {
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  const TempFile file(npy_file(npy_dict("<f4", "(2, 3)"), raw_bytes(values)));
  {
    const TensorView view = load_npy(*device_, file.path());
    const MemoryStats s = device_->memory();
    EXPECT_EQ(s.mapped, nuvec::mapping_size(file.size()));
    EXPECT_EQ(s.active, 0u);
    EXPECT_EQ(view.name, file.path().stem().string());
    EXPECT_EQ(view.dtype, DType::F32);
    EXPECT_EQ(view.shape, (std::vector<std::uint64_t>{2, 3}));
    EXPECT_EQ(values_of<float>(view), values);
    const auto* mapping = static_cast<const nuvec::Mapping*>(view.storage.get());
    EXPECT_EQ(view.bytes.data(), mapping->bytes().data() + 128) << "the view is a slice of the mapping";
  }
  EXPECT_EQ(device_->memory().mapped, 0u) << "the mapping goes with the last view";
}

TEST_F(NpyLoad, AViewKeepsItsMappingAliveAfterOtherCopiesGo) {
  const TempFile file(npy_file(npy_dict("<i4", "(2,)"), raw_bytes(std::vector<std::int32_t>{7, 8})));
  TensorView copy;
  {
    const TensorView view = load_npy(*device_, file.path());
    copy = view;
  }
  EXPECT_EQ(device_->memory().mapped, nuvec::mapping_size(file.size()));
  EXPECT_EQ(values_of<std::int32_t>(copy), (std::vector<std::int32_t>{7, 8}));
  copy = {};
  EXPECT_EQ(device_->memory().mapped, 0u);
}

TEST_F(NpyLoad, ConvertsBigEndianDataIntoOneBuffer) {
  std::vector<std::byte> data;
  for (std::uint32_t v : {0x01020304u, 0xA0B0C0D0u}) {
    for (int shift = 24; shift >= 0; shift -= 8) data.push_back(std::byte((v >> shift) & 0xff));
  }
  const TempFile file(npy_file(npy_dict(">u4", "(2,)"), data));
  const TensorView view = load_npy(*device_, file.path());
  EXPECT_EQ(values_of<std::uint32_t>(view), (std::vector<std::uint32_t>{0x01020304u, 0xA0B0C0D0u}));
  const MemoryStats s = device_->memory();
  EXPECT_EQ(s.mapped, 0u);
  EXPECT_EQ(s.active, *nuvec::allocation_size(8));
}

TEST_F(NpyLoad, SwapsComplexHalvesSeparately) {
  std::vector<std::byte> data;
  for (float part : {1.5f, -2.0f}) {
    std::uint32_t bits;
    std::memcpy(&bits, &part, 4);
    for (int shift = 24; shift >= 0; shift -= 8) data.push_back(std::byte((bits >> shift) & 0xff));
  }
  const TempFile file(npy_file(npy_dict(">c8", "()"), data));
  const TensorView view = load_npy(*device_, file.path());
  EXPECT_EQ(view.dtype, DType::C64);
  EXPECT_EQ(values_of<float>(view), (std::vector<float>{1.5f, -2.0f}));
}

TEST_F(NpyLoad, ReadsDataThatIsNotAlignedToItsElement) {
  // A writer that pads to 2 bytes only: the f8 data starts at an offset that
  // is not a multiple of 8, so it is read into an aligned buffer.
  const std::vector<double> values = {0.25, -8.5};
  const auto bytes = npy_file(npy_dict("<f8", "(2,)"), raw_bytes(values), 1, 2);
  ASSERT_NE((bytes.size() - 16) % 8, 0u);
  const TempFile file(bytes);
  const TensorView view = load_npy(*device_, file.path());
  EXPECT_EQ(values_of<double>(view), values);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(view.bytes.data()) % 8, 0u);
  EXPECT_EQ(device_->memory().mapped, 0u);
}

TEST_F(NpyLoad, RefusesFortranOrderByDefault) {
  const TempFile file(npy_file(npy_dict("<f4", "(2, 3)", true), std::vector<std::byte>(24)));
  const MemoryStats before = device_->memory();
  try {
    load_npy(*device_, file.path());
    ADD_FAILURE() << "accepted a Fortran-order array";
  } catch (const nuvec::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("Fortran"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("FortranOrder::load_transposed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(device_->memory(), before);
}

TEST_F(NpyLoad, LoadsFortranOrderAsTheTransposeWhenAsked) {
  // a = [[0, 1, 2], [3, 4, 5]] stored column by column is a.T in C order.
  const std::vector<float> column_major = {0, 3, 1, 4, 2, 5};
  const TempFile file(npy_file(npy_dict("<f4", "(2, 3)", true), raw_bytes(column_major)));
  const TensorView view = load_npy(*device_, file.path(), FortranOrder::load_transposed);
  EXPECT_EQ(view.shape, (std::vector<std::uint64_t>{3, 2}));
  EXPECT_EQ(values_of<float>(view), column_major);
}

TEST_F(NpyLoad, LoadsAnEmptyArrayWithoutMappingOrAllocating) {
  for (const char* descr : {"<f2", ">f2"}) {
    const TempFile file(npy_file(npy_dict(descr, "(0, 3)"), {}));
    const MemoryStats before = device_->memory();
    const TensorView view = load_npy(*device_, file.path());
    EXPECT_EQ(view.shape, (std::vector<std::uint64_t>{0, 3}));
    EXPECT_TRUE(view.bytes.empty());
    EXPECT_EQ(device_->memory(), before) << descr << ": no bytes, as an empty GGUF or safetensors file";
    EXPECT_EQ(nuvec::io::npy_footprint(file.path()), nuvec::io::Footprint{});
  }
}

TEST_F(NpyLoad, TheFootprintIsWhatALoadAdds) {
  const std::vector<std::vector<std::byte>> files = {
      npy_file(npy_dict("<f4", "(1000,)"), std::vector<std::byte>(4000)),  // mapped
      npy_file(npy_dict(">f4", "(1000,)"), std::vector<std::byte>(4000)),  // read and swapped
      npy_file(npy_dict("<f8", "(3,)"), std::vector<std::byte>(24), 1, 2),  // read: misaligned (padded to 2 bytes)
  };
  for (const auto& bytes : files) {
    const TempFile file(bytes);
    const nuvec::io::Footprint predicted = nuvec::io::npy_footprint(file.path());
    const MemoryStats before = device_->memory();
    const TensorView view = load_npy(*device_, file.path());
    const MemoryStats after = device_->memory();
    EXPECT_EQ(after.mapped - before.mapped, predicted.mapped);
    EXPECT_EQ(after.active - before.active, predicted.active);
    EXPECT_GT(predicted.peak_with_mapped(), 0u);
  }
}

TEST_F(NpyLoad, ReadsTheHeaderAlone) {
  const TempFile file(npy_file(npy_dict("<i2", "(2, 5)"), std::vector<std::byte>(20)));
  const MemoryStats before = device_->memory();
  const nuvec::io::NpyHeader header = nuvec::io::read_npy_header(file.path());
  EXPECT_EQ(header.dtype, DType::I16);
  EXPECT_EQ(header.shape, (std::vector<std::uint64_t>{2, 5}));
  EXPECT_EQ(header.data_bytes, 20u);
  EXPECT_EQ(device_->memory(), before);
  EXPECT_THROW(nuvec::io::read_npy_header("/nonexistent/nuvec/array.npy"), nuvec::IoError);
}

TEST_F(NpyLoad, ARefusedFileChangesNoStatistic) {
  const std::vector<std::vector<std::byte>> hostile = {
      {},
      nuvec_test::to_bytes("\x93NUMPY\x01\x00"),
      npy_file("{'descr': '<f4', 'fortran_order': False}", {}),
      npy_file(npy_dict("<f4", "(3,)"), std::vector<std::byte>(11)),
      npy_file(npy_dict(">f4", "(3,)"), std::vector<std::byte>(11)),  // would have been read into a buffer
      npy_file(npy_dict("<f4", "(3,)"), std::vector<std::byte>(13)),
      npy_file(npy_dict("<x9", "(3,)"), std::vector<std::byte>(12)),
  };
  const MemoryStats before = device_->memory();
  for (const auto& bytes : hostile) {
    const TempFile file(bytes);
    EXPECT_THROW(load_npy(*device_, file.path()), nuvec::FormatError);
    EXPECT_EQ(device_->memory(), before);
  }
}

TEST_F(NpyLoad, APassedMemoryLimitIsOutOfMemoryAndChangesNothing) {
  const TempFile mapped(npy_file(npy_dict("<f4", "(1024,)"), std::vector<std::byte>(4096)));
  const TempFile read(npy_file(npy_dict(">f4", "(1024,)"), std::vector<std::byte>(4096)));
  device_->set_memory_limit(1024);
  const MemoryStats before = device_->memory();
  EXPECT_THROW(load_npy(*device_, mapped.path()), nuvec::OutOfMemory);
  EXPECT_THROW(load_npy(*device_, read.path()), nuvec::OutOfMemory);
  EXPECT_EQ(device_->memory(), before);
}

TEST_F(NpyLoad, AMissingFileIsAnIoError) {
  EXPECT_THROW(load_npy(*device_, "/nonexistent/nuvec/array.npy"), nuvec::IoError);
}

}  // namespace
