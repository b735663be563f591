// Files that other writers made (fixtures/README.md says how), checked byte
// for byte: names, dtypes, shapes, data, metadata, and how each is loaded.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <initializer_list>

#include "io/safetensors/safetensors_test_support.h"
#include "nuvec/io/footprint.h"
#include "nuvec/io/safetensors.h"

namespace {

using nuvec::io::DType;
using nuvec::io::LoadPath;
using nuvec_test::TestTensor;

const std::filesystem::path kFixtures = NUVEC_SAFETENSORS_FIXTURES;

template <class T>
std::vector<std::byte> little_endian(std::initializer_list<T> values) {
  static_assert(std::endian::native == std::endian::little);
  std::vector<std::byte> out(values.size() * sizeof(T));
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

// What each fixture holds, written out independently of make_fixtures.py.
std::vector<TestTensor> pytorch_reference_tensors() {
  return {
      {"step", DType::I64, {}, little_endian<std::int64_t>({7})},
      {"embed.weight", DType::F32, {2, 3}, little_endian<float>({0, 1, 2, 3, 4, 5})},
      {"scale", DType::BF16, {2}, little_endian<std::uint16_t>({0x3F80, 0xBFC0})},  // 1.0, -1.5
      {"layer.bias", DType::F16, {3}, little_endian<std::uint16_t>({0x3C00, 0xC000, 0x3800})},  // 1, -2, 0.5
      {"mask", DType::BOOL, {5}, little_endian<std::uint8_t>({1, 0, 1, 1, 0})},
  };
}

std::vector<TestTensor> mlx_unpadded_tensors() {
  return {
      {"b", DType::F16, {3}, little_endian<std::uint16_t>({0x3C00, 0xC000, 0x3800})},
      {"c", DType::C64, {2}, little_endian<float>({1, 2, -0.5, 0})},
      {"flag", DType::BOOL, {1}, little_endian<std::uint8_t>({1})},
      {"ids", DType::U32, {3}, little_endian<std::uint32_t>({1, 70000, 4294967295u})},
      {"w", DType::F32, {2, 2}, little_endian<float>({1, 2, 3, 4})},
  };
}

std::vector<TestTensor> mlx_null_metadata_tensors() {
  return {
      {"x", DType::I8, {4}, little_endian<std::int8_t>({1, -2, 3, -4})},
      {"y", DType::F16, {2, 2}, little_endian<std::uint16_t>({0x3800, 0x3C00, 0x4000, 0x8000})},
  };
}

void expect_in_order(const nuvec::io::SafetensorsFile& loaded, const std::vector<TestTensor>& expected) {
  nuvec_test::expect_tensors(loaded, expected);
  for (std::size_t i = 0; i < expected.size() && i < loaded.size(); ++i) {
    EXPECT_EQ(loaded.tensors()[i].name, expected[i].name) << "header order";
  }
}

TEST(SafetensorsFixtures, PytorchReferenceLayoutIsMappedWithEveryByteRight) {
  const auto path = kFixtures / "pytorch_reference.safetensors";
  const auto header = nuvec::io::read_safetensors_header(path);
  EXPECT_EQ(header.header_length % 8, 0u) << "the Rust writer pads to 8";
  EXPECT_EQ(header.tensors.back().end, header.file_size - header.data_start) << "no trailing bytes";
  EXPECT_TRUE(header.aligned());

  auto device = nuvec_test::fresh_device();
  const auto loaded = nuvec::io::load_safetensors(*device, path);
  expect_in_order(loaded, pytorch_reference_tensors());
  EXPECT_EQ(loaded.metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(loaded.sources()[0].load_path, LoadPath::mapped);
}

TEST(SafetensorsFixtures, MlxUnpaddedLayoutIsReadWithEveryByteRight) {
  const auto path = kFixtures / "mlx_unpadded.safetensors";
  const auto header = nuvec::io::read_safetensors_header(path);
  EXPECT_FALSE(header.aligned());

  auto device = nuvec_test::fresh_device();
  const auto loaded = nuvec::io::load_safetensors(*device, path);
  expect_in_order(loaded, mlx_unpadded_tensors());  // keys sorted, unlike the data
  EXPECT_EQ(loaded.metadata(), (std::map<std::string, std::string>{{"format", "mlx"}}));
  EXPECT_EQ(loaded.sources()[0].load_path, LoadPath::read);
  for (const auto& t : loaded.tensors()) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.bytes.data()) % nuvec::io::dtype_size(t.dtype), 0u) << t.name;
  }
}

TEST(SafetensorsFixtures, MlxNullMetadataIsEmptyMetadata) {
  auto device = nuvec_test::fresh_device();
  const auto loaded = nuvec::io::load_safetensors(*device, kFixtures / "mlx_null_metadata.safetensors");
  expect_in_order(loaded, mlx_null_metadata_tensors());
  EXPECT_TRUE(loaded.metadata().empty());
}

// The prediction from headers alone equals what a load adds, exactly.
TEST(SafetensorsFixtures, FootprintEqualsTheMeasuredChangeForEveryFixture) {
  const std::vector<std::pair<std::string, nuvec::io::TensorFilter>> cases = {
      {"pytorch_reference.safetensors", {}},
      {"pytorch_reference.safetensors", nuvec::io::TensorFilter{"mask", "step"}},
      {"mlx_unpadded.safetensors", {}},
      {"mlx_unpadded.safetensors", nuvec::io::TensorFilter{"ids"}},
      {"mlx_null_metadata.safetensors", {}},
  };
  for (const auto& [name, filter] : cases) {
    SCOPED_TRACE(name);
    const auto path = kFixtures / name;
    const nuvec::io::Footprint predicted = nuvec::io::footprint(path, filter);
    auto device = nuvec_test::fresh_device();
    device->reset_peak();
    const nuvec::MemoryStats before = device->memory();
    const auto loaded = nuvec::io::load_safetensors(*device, path, {filter});
    const nuvec::MemoryStats after = device->memory();
    EXPECT_EQ(after.mapped - before.mapped, predicted.mapped);
    EXPECT_EQ(after.active - before.active, predicted.active);
    EXPECT_EQ(after.peak_with_mapped - before.peak_with_mapped, predicted.peak_with_mapped());
    EXPECT_GT(predicted.peak_with_mapped(), 0u);
  }
}

TEST(SafetensorsFixtures, FootprintOfSeveralFilesIsTheSumOfTheirLoads) {
  const std::vector<std::filesystem::path> paths = {kFixtures / "pytorch_reference.safetensors",
                                                    kFixtures / "mlx_unpadded.safetensors"};
  const nuvec::io::Footprint predicted = nuvec::io::footprint(paths);
  auto device = nuvec_test::fresh_device();
  std::vector<nuvec::io::SafetensorsFile> loads;
  for (const auto& p : paths) loads.push_back(nuvec::io::load_safetensors(*device, p));
  EXPECT_EQ(device->memory().mapped, predicted.mapped);
  EXPECT_EQ(device->memory().active, predicted.active);
  EXPECT_EQ(device->memory().peak_with_mapped, predicted.peak_with_mapped());
}

}  // namespace
