#include "io/gguf/gguf_metadata.h"

#include <fmt/format.h>

namespace nuvec::io {
namespace {

constexpr std::uint32_t kValueTypeCount = 13;

GgufValueType read_value_type(GgufCursor& cursor) {
  const std::uint64_t at = cursor.offset();
  const auto raw = cursor.read<std::uint32_t>("value type");
  if (raw >= kValueTypeCount) {
    cursor.fail(at, fmt::format("unknown GGUF value type {} (0..12 are defined)", raw));
  }
  return static_cast<GgufValueType>(raw);
}

bool read_bool(GgufCursor& cursor) {
  const std::uint64_t at = cursor.offset();
  const auto byte = cursor.read<std::uint8_t>("bool");
  if (byte > 1) cursor.fail(at, fmt::format("bool value {} is neither 0 nor 1", byte));
  return byte == 1;
}

// `count` fixed-size scalars, after checking that they fit in the file and
// are at hand: the vector is never larger than bytes actually read.
template <class T>
std::vector<T> read_scalars(GgufCursor& cursor, std::uint64_t count) {
  cursor.check_count(count, sizeof(T), "array elements");
  cursor.need(count * sizeof(T), "array elements");
  std::vector<T> values(static_cast<std::size_t>(count));
  cursor.read_array(values.data(), values.size(), sizeof(T), "array elements");
  return values;
}

GgufArray read_array(GgufCursor& cursor, std::uint32_t depth);

// Elements of variable size are read one by one: the vector grows only with
// bytes actually present, never by the count alone.
GgufArray::Elements read_elements(GgufCursor& cursor, GgufValueType type, std::uint64_t count, std::uint32_t depth) {
  switch (type) {
    case GgufValueType::UINT8: return read_scalars<std::uint8_t>(cursor, count);
    case GgufValueType::INT8: return read_scalars<std::int8_t>(cursor, count);
    case GgufValueType::UINT16: return read_scalars<std::uint16_t>(cursor, count);
    case GgufValueType::INT16: return read_scalars<std::int16_t>(cursor, count);
    case GgufValueType::UINT32: return read_scalars<std::uint32_t>(cursor, count);
    case GgufValueType::INT32: return read_scalars<std::int32_t>(cursor, count);
    case GgufValueType::FLOAT32: return read_scalars<float>(cursor, count);
    case GgufValueType::UINT64: return read_scalars<std::uint64_t>(cursor, count);
    case GgufValueType::INT64: return read_scalars<std::int64_t>(cursor, count);
    case GgufValueType::FLOAT64: return read_scalars<double>(cursor, count);
    case GgufValueType::BOOL: {
      cursor.check_count(count, 1, "bool array elements");
      std::vector<bool> values;
      for (std::uint64_t i = 0; i < count; ++i) values.push_back(read_bool(cursor));
      return values;
    }
    case GgufValueType::STRING: {
      cursor.check_count(count, sizeof(std::uint64_t), "string array elements");
      std::vector<std::string> values;
      for (std::uint64_t i = 0; i < count; ++i) values.push_back(cursor.read_string("string array element"));
      return values;
    }
    case GgufValueType::ARRAY: {
      cursor.check_count(count, sizeof(std::uint32_t) + sizeof(std::uint64_t), "nested arrays");
      std::vector<GgufArray> values;
      for (std::uint64_t i = 0; i < count; ++i) values.push_back(read_array(cursor, depth + 1));
      return values;
    }
  }
  return {};  // unreachable: read_value_type admits only the types above
}

GgufArray read_array(GgufCursor& cursor, std::uint32_t depth) {
  if (depth > kGgufMaxArrayDepth) {
    cursor.fail(cursor.offset(), fmt::format("arrays nested deeper than {} levels", kGgufMaxArrayDepth));
  }
  const GgufValueType type = read_value_type(cursor);
  const auto count = cursor.read<std::uint64_t>("array length");
  return GgufArray{read_elements(cursor, type, count, depth)};
}

}  // namespace

GgufValue read_gguf_typed_value(GgufCursor& cursor) {
  switch (read_value_type(cursor)) {
    case GgufValueType::UINT8: return cursor.read<std::uint8_t>("uint8 value");
    case GgufValueType::INT8: return cursor.read<std::int8_t>("int8 value");
    case GgufValueType::UINT16: return cursor.read<std::uint16_t>("uint16 value");
    case GgufValueType::INT16: return cursor.read<std::int16_t>("int16 value");
    case GgufValueType::UINT32: return cursor.read<std::uint32_t>("uint32 value");
    case GgufValueType::INT32: return cursor.read<std::int32_t>("int32 value");
    case GgufValueType::FLOAT32: return cursor.read<float>("float32 value");
    case GgufValueType::BOOL: return read_bool(cursor);
    case GgufValueType::STRING: return cursor.read_string("string value");
    case GgufValueType::ARRAY: return read_array(cursor, 1);
    case GgufValueType::UINT64: return cursor.read<std::uint64_t>("uint64 value");
    case GgufValueType::INT64: return cursor.read<std::int64_t>("int64 value");
    case GgufValueType::FLOAT64: return cursor.read<double>("float64 value");
  }
  return {};  // unreachable
}

}  // namespace nuvec::io

namespace nuvec::io {

std::string_view gguf_value_type_name(GgufValueType type) {
  static constexpr std::string_view kNames[] = {"uint8", "int8",   "uint16", "int16", "uint32", "int32", "float32",
                                                "bool",  "string", "array",  "uint64", "int64", "float64"};
  const auto i = static_cast<std::uint32_t>(type);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::size_t GgufArray::size() const {
  return std::visit([](const auto& values) { return values.size(); }, elements);
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const GgufKeyValue& kv : metadata) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

}  // namespace nuvec::io
