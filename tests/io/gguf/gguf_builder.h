// Building GGUF files in tests, in llama.cpp's layout (gguf_write_to_buf):
// header, key/values, tensor infos, padding to the alignment, then each
// tensor's data padded to the alignment. ByteWriter writes the pieces by
// hand for files that are wrong on purpose.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "nuvec/io/gguf.h"

namespace nuvec_test {

// Little-endian bytes (the hosts nuvec runs on are little-endian).
class ByteWriter {
 public:
  template <class T>
  ByteWriter& le(T value) {
    static_assert(std::is_arithmetic_v<T>);
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
    return *this;
  }
  ByteWriter& u8(std::uint8_t v) { return le(v); }
  ByteWriter& u32(std::uint32_t v) { return le(v); }
  ByteWriter& u64(std::uint64_t v) { return le(v); }
  ByteWriter& raw(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes.insert(bytes.end(), p, p + s.size());
    return *this;
  }
  ByteWriter& raw(const std::vector<std::byte>& b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return *this;
  }
  // A GGUF string: uint64 length, bytes.
  ByteWriter& str(std::string_view s) { return u64(s.size()).raw(s); }
  ByteWriter& pad_to(std::size_t alignment) {
    bytes.resize((bytes.size() + alignment - 1) / alignment * alignment, std::byte{0});
    return *this;
  }
  // "GGUF", version, tensor count, key/value count.
  ByteWriter& preamble(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
    return raw("GGUF").u32(version).u64(tensors).u64(kvs);
  }

  std::vector<std::byte> bytes;
};

namespace detail {

inline void write_elements(ByteWriter& w, const nuvec::io::GgufArray& array);

// The value alone, without its type.
inline void write_payload(ByteWriter& w, const nuvec::io::GgufValue& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          w.str(v);
        } else if constexpr (std::is_same_v<T, nuvec::io::GgufArray>) {
          w.u32(static_cast<std::uint32_t>(v.element_type())).u64(v.size());
          write_elements(w, v);
        } else if constexpr (std::is_same_v<T, bool>) {
          w.u8(v ? 1 : 0);
        } else {
          w.le(v);
        }
      },
      value);
}

inline void write_elements(ByteWriter& w, const nuvec::io::GgufArray& array) {
  std::visit(
      [&](const auto& values) {
        for (const auto& v : values) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::vector<bool>::const_reference>) {
            w.u8(v ? 1 : 0);
          } else if constexpr (std::is_same_v<T, nuvec::io::GgufArray>) {
            w.u32(static_cast<std::uint32_t>(v.element_type())).u64(v.size());
            write_elements(w, v);
          } else if constexpr (std::is_same_v<T, std::string>) {
            w.str(v);
          } else {
            w.le(v);
          }
        }
      },
      array.elements);
}

}  // namespace detail

// A value's type and the value, as a key/value writes them.
inline void write_typed_value(ByteWriter& w, const nuvec::io::GgufValue& value) {
  w.u32(static_cast<std::uint32_t>(value.index()));
  detail::write_payload(w, value);
}

class GgufBuilder {
 public:
  struct Tensor {
    std::string name;
    std::vector<std::uint64_t> dims;  // ggml order
    std::uint32_t type = 0;
    std::vector<std::byte> data;
    std::optional<std::uint64_t> offset;  // laid out in order when empty
  };

  GgufBuilder& kv(std::string key, nuvec::io::GgufValue value) {
    kvs.push_back({std::move(key), std::move(value)});
    return *this;
  }
  // Sets general.alignment (a uint32, as llama.cpp writes it) and lays out with it.
  GgufBuilder& alignment(std::uint32_t a) {
    align = a;
    return kv("general.alignment", a);
  }
  GgufBuilder& tensor(std::string name, std::vector<std::uint64_t> dims, std::uint32_t type,
                      std::vector<std::byte> data) {
    tensors.push_back({std::move(name), std::move(dims), type, std::move(data), std::nullopt});
    return *this;
  }

  // Each tensor's offset from the start of the data.
  std::vector<std::uint64_t> offsets() const {
    std::vector<std::uint64_t> out;
    std::uint64_t next = 0;
    for (const Tensor& t : tensors) {
      out.push_back(t.offset.value_or(next));
      next = (out.back() + t.data.size() + align - 1) / align * align;
    }
    return out;
  }

  std::vector<std::byte> build() const {
    ByteWriter w;
    w.preamble(tensors.size(), kvs.size(), version);
    for (const auto& kv : kvs) {
      w.str(kv.key);
      write_typed_value(w, kv.value);
    }
    const std::vector<std::uint64_t> at = offsets();
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      w.str(t.name).u32(static_cast<std::uint32_t>(t.dims.size()));
      for (std::uint64_t d : t.dims) w.u64(d);
      w.u32(t.type).u64(at[i]);
    }
    w.pad_to(align);
    const std::size_t data_start = w.bytes.size();
    // Tensors without data (hostile offsets far past the end) write nothing;
    // overlapping ones overwrite each other: the header is what matters.
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].data.empty()) continue;
      const std::size_t end = data_start + at[i] + tensors[i].data.size();
      if (w.bytes.size() < end) w.bytes.resize(end, std::byte{0});
      std::memcpy(w.bytes.data() + data_start + at[i], tensors[i].data.data(), tensors[i].data.size());
    }
    if (!tensors.empty()) w.pad_to(align);
    return w.bytes;
  }

  std::uint32_t version = 3;
  std::uint64_t align = nuvec::io::kGgufDefaultAlignment;
  std::vector<nuvec::io::GgufKeyValue> kvs;
  std::vector<Tensor> tensors;
};

// `n` bytes counting up from `seed`, so that every tensor's bytes differ.
inline std::vector<std::byte> counting_bytes(std::size_t n, std::uint8_t seed = 0) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = std::byte(static_cast<std::uint8_t>(seed + i));
  return out;
}

}  // namespace nuvec_test
