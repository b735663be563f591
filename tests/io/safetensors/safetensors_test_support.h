// Helpers for the safetensors tests: file bytes from a header and data, a
// fresh device, and a refusal check that also checks nothing was counted.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/cpu_backend.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/io/safetensors.h"
#include "support/temp_file.h"  // TempDir

namespace nuvec_test {

inline std::vector<std::byte> as_bytes(std::string_view text) {
  std::vector<std::byte> out(text.size());
  if (!text.empty()) std::memcpy(out.data(), text.data(), text.size());
  return out;
}

// 8-byte little-endian `length`, then `json`, then `data`.
inline std::vector<std::byte> safetensors_bytes(std::uint64_t length, std::string_view json,
                                                const std::vector<std::byte>& data = {}) {
  std::vector<std::byte> out;
  for (int i = 0; i < 8; ++i) out.push_back(std::byte((length >> (8 * i)) & 0xff));
  const auto text = as_bytes(json);
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}
inline std::vector<std::byte> safetensors_bytes(std::string_view json, const std::vector<std::byte>& data = {}) {
  return safetensors_bytes(json.size(), json, data);
}

// A device of its own, reading no environment: its statistics move only
// with what a test does.
inline std::unique_ptr<nuvec::Device> fresh_device() {
  return std::make_unique<nuvec::Device>(nuvec::cpu::make_backend(), false);
}

inline void write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}
inline void write_file(const std::filesystem::path& path, std::string_view text) { write_file(path, as_bytes(text)); }

inline std::vector<std::byte> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

inline std::vector<std::byte> to_vector(std::span<const std::byte> bytes) { return {bytes.begin(), bytes.end()}; }

// Runs `load` expecting a FormatError at `offset` whose message holds
// `reason` and names the file; checks `device`'s statistics did not move.
template <class Load>
void expect_format_error(nuvec::Device& device, Load&& load, const std::filesystem::path& file, std::uint64_t offset,
                         std::string_view reason) {
  const nuvec::MemoryStats before = device.memory();
  try {
    load();
    ADD_FAILURE() << "expected a FormatError (" << reason << ")";
  } catch (const nuvec::FormatError& e) {
    EXPECT_EQ(e.offset(), offset) << e.what();
    EXPECT_EQ(e.file(), file) << e.what();
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(device.memory(), before) << "a refused file changed the statistics";
}

}  // namespace nuvec_test

namespace nuvec_test {

// A tensor owned by a test.
struct TestTensor {
  std::string name;
  nuvec::io::DType dtype = nuvec::io::DType::U8;
  std::vector<std::uint64_t> shape;
  std::vector<std::byte> bytes;

  nuvec::io::TensorView view() const { return {name, dtype, shape, bytes, nullptr}; }
};

inline std::uint64_t element_count(const std::vector<std::uint64_t>& shape) {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;
  return n;
}

inline TestTensor random_tensor(std::string name, nuvec::io::DType dtype, std::vector<std::uint64_t> shape,
                                std::uint64_t seed) {
  const std::size_t n = element_count(shape) * nuvec::io::dtype_size(dtype);
  std::vector<std::byte> bytes(n);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::byte& b : bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = std::byte(x & 0xff);
  }
  return {std::move(name), dtype, std::move(shape), std::move(bytes)};
}

// Tensors of awkward sizes: odd byte counts, a scalar, an empty one (names
// behind `prefix`, so several shards can hold them).
inline std::vector<TestTensor> awkward_tensors(const std::string& prefix = "") {
  using nuvec::io::DType;
  return {random_tensor(prefix + "embed", DType::BF16, {33, 7}, 1), random_tensor(prefix + "mask", DType::BOOL, {5}, 2),
          random_tensor(prefix + "scale", DType::F32, {}, 3),       random_tensor(prefix + "empty", DType::F16, {0, 4}, 4),
          random_tensor(prefix + "ids", DType::I64, {3}, 5),        random_tensor(prefix + "c", DType::C64, {2}, 6)};
}

inline std::vector<nuvec::io::TensorView> views_of(const std::vector<TestTensor>& tensors) {
  std::vector<nuvec::io::TensorView> views;
  for (const TestTensor& t : tensors) views.push_back(t.view());
  return views;
}

// A file as MLX writes one: keys sorted (nlohmann's std::map), no padding
// after the header, data in the order given, so tensors land where they fall.
inline std::vector<std::byte> unpadded_file(const std::vector<TestTensor>& tensors,
                                            const std::map<std::string, std::string>& metadata = {}) {
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) json += ',';
      json += '"';
      json += k;
      json += "\":\"";
      json += v;
      json += '"';
      first = false;
    }
    json += "}";
  }
  std::uint64_t at = 0;
  std::vector<std::byte> data;
  std::map<std::string, std::string> entries;  // sorted by name, as MLX's header
  for (const TestTensor& t : tensors) {
    std::string shape;
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i > 0) shape += ',';
      shape += std::to_string(t.shape[i]);
    }
    entries[t.name] = "{\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + t.bytes.size()) +
                      "],\"dtype\":\"" + std::string(nuvec::io::dtype_name(t.dtype)) + "\",\"shape\":[" + shape + "]}";
    at += t.bytes.size();
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  }
  for (const auto& [name, entry] : entries) {
    if (json.size() > 1) json += ',';
    json += '"';
    json += name;
    json += "\":";
    json += entry;
  }
  json += "}";
  return safetensors_bytes(json, data);
}

// Checks that `loaded` holds exactly `expected` (names, dtypes, shapes, bytes).
inline void expect_tensors(const nuvec::io::SafetensorsFile& loaded, const std::vector<TestTensor>& expected) {
  ASSERT_EQ(loaded.size(), expected.size());
  for (const TestTensor& e : expected) {
    const nuvec::io::TensorView* t = loaded.find(e.name);
    ASSERT_NE(t, nullptr) << e.name;
    EXPECT_EQ(t->dtype, e.dtype) << e.name;
    EXPECT_EQ(t->shape, e.shape) << e.name;
    EXPECT_EQ(to_vector(t->bytes), e.bytes) << e.name;
  }
}

}  // namespace nuvec_test

namespace nuvec_test {

// A file as nuvec's save_safetensors wrote them before it wrote the
// reference layout: tensors in the order given, the data start and every
// tensor at a 256-byte boundary, each gap after a tensor but the last
// declared as a U8 tensor of zeros named "__nuvec_padding_<begin>__", the
// header padded with spaces. tests/io/safetensors/fixtures/nuvec_padded.safetensors
// is such a file, from that writer itself (a test checks this matches it).
inline std::vector<std::byte> old_padded_file(const std::vector<TestTensor>& tensors,
                                              const std::map<std::string, std::string>& metadata = {}) {
  auto quoted = [](const std::string& s) { return "\"" + s + "\""; };  // the tests' names need no escapes
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) json += ',';
      json += quoted(k) + ":" + quoted(v);
      first = false;
    }
    json += "}";
  }
  auto entry = [&](const std::string& name, std::string_view dtype, const std::vector<std::uint64_t>& shape,
                   std::uint64_t begin, std::uint64_t end) {
    std::string dims;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (i > 0) dims += ',';
      dims += std::to_string(shape[i]);
    }
    if (json.size() > 1) json += ',';
    json += quoted(name) + ":{\"dtype\":\"" + std::string(dtype) + "\",\"shape\":[" + dims + "],\"data_offsets\":[" +
            std::to_string(begin) + "," + std::to_string(end) + "]}";
  };
  std::vector<std::byte> data;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TestTensor& t = tensors[i];
    const std::uint64_t at = data.size();
    entry(t.name, nuvec::io::dtype_name(t.dtype), t.shape, at, at + t.bytes.size());
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
    const std::uint64_t next = (data.size() + 255) / 256 * 256;
    if (i + 1 < tensors.size() && next != data.size()) {
      entry("__nuvec_padding_" + std::to_string(data.size()) + "__", "U8", {next - data.size()}, data.size(), next);
      data.resize(next);
    }
  }
  json += "}";
  json.append((8 + json.size() + 255) / 256 * 256 - 8 - json.size(), ' ');
  return safetensors_bytes(json, data);
}

}  // namespace nuvec_test

namespace nuvec_test {

inline std::string read_file_text(const std::filesystem::path& path) {
  const auto bytes = read_file(path);
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace nuvec_test
