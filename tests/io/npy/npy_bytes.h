// Building .npy files in tests: numpy's layout (see fixtures/README.md), with
// every piece open to being wrong on purpose.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec_test {

inline std::vector<std::byte> to_bytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

inline void append(std::vector<std::byte>& out, const std::vector<std::byte>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

// The preamble: magic, version, header length (2 bytes in 1.x, else 4).
inline std::vector<std::byte> npy_preamble(std::uint8_t major, std::uint8_t minor, std::uint64_t header_length) {
  std::vector<std::byte> out = to_bytes("\x93NUMPY");
  out.push_back(std::byte{major});
  out.push_back(std::byte{minor});
  const int width = major == 1 ? 2 : 4;
  for (int i = 0; i < width; ++i) out.push_back(std::byte((header_length >> (8 * i)) & 0xff));
  return out;
}

// A whole file: `dict` padded with spaces and '\n' so the data starts at a
// multiple of `align` (numpy: 64), then `data`.
inline std::vector<std::byte> npy_file(std::string_view dict, const std::vector<std::byte>& data,
                                       std::uint8_t major = 1, std::size_t align = 64) {
  const std::size_t preamble = major == 1 ? 10 : 12;
  std::string header(dict);
  const std::size_t unpadded = preamble + header.size() + 1;
  header.append((align - unpadded % align) % align, ' ');
  header.push_back('\n');
  std::vector<std::byte> out = npy_preamble(major, 0, header.size());
  append(out, to_bytes(header));
  append(out, data);
  return out;
}

// The dict numpy writes for a dtype string and a shape such as "(3, 4)".
inline std::string npy_dict(std::string_view descr, std::string_view shape, bool fortran = false) {
  return "{'descr': '" + std::string(descr) + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + std::string(shape) + ", }";
}

// The bytes of `values`, native order.
template <class T>
std::vector<std::byte> raw_bytes(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace nuvec_test
