// The GGUF header: preamble, key/values, tensor infos, and the checks that
// tie the tensors to the data (alignment, bounds, overlaps).
#include "io/gguf/gguf_parse.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>

#include "io/gguf/gguf_cursor.h"
#include "io/gguf/gguf_metadata.h"
#include "nuvec/error.h"

namespace nuvec::io {
namespace {

constexpr std::uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
constexpr std::uint64_t kMaxElements = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// Smallest encodings, for bounding counts: a key/value is a key length, a
// type and a one-byte value; a tensor info a name length, n_dims, a type and
// an offset.
constexpr std::uint64_t kMinKeyValueSize = 8 + 4 + 1;
constexpr std::uint64_t kMinTensorInfoSize = 8 + 4 + 4 + 8;

// Where each tensor info's fields are in the file, for errors found later.
struct InfoOffsets {
  std::uint64_t info = 0;
  std::uint64_t offset_field = 0;
};

std::uint32_t read_version(GgufCursor& cursor) {
  cursor.need(4, "magic");
  if (cursor.read<std::uint32_t>("magic") != 0x46554747u) {  // "GGUF" read as little-endian
    cursor.fail(0, "not a GGUF file: it does not start with \"GGUF\"");
  }
  const auto version = cursor.read<std::uint32_t>("version");
  if (version == 2 || version == 3) return version;
  if (version == 0x02000000u || version == 0x03000000u) {
    cursor.fail(4, "a big-endian GGUF file: nuvec reads little-endian ones only");
  }
  if (version == 1) cursor.fail(4, "GGUF version 1 (32-bit counts, from 2023) is not supported: convert it to version 3");
  cursor.fail(4, fmt::format("unsupported GGUF version {} (nuvec reads version 3, and 2, which has its layout)", version));
}

std::uint64_t checked_alignment(const GgufCursor& cursor, const GgufValue& value, std::uint64_t value_at) {
  const auto* alignment = std::get_if<std::uint32_t>(&value);
  if (alignment == nullptr) {
    cursor.fail(value_at, fmt::format("general.alignment must be a uint32, not a {}",
                                      gguf_value_type_name(gguf_value_type(value))));
  }
  if (!std::has_single_bit(*alignment)) {
    cursor.fail(value_at, fmt::format("general.alignment {} is not a power of two", *alignment));
  }
  return *alignment;
}

void read_metadata(GgufCursor& cursor, std::uint64_t count, GgufFile& file) {
  cursor.check_count(count, kMinKeyValueSize, "key/values");
  std::unordered_set<std::string> keys;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t key_at = cursor.offset();
    std::string key = cursor.read_string("metadata key");
    if (!keys.insert(key).second) cursor.fail(key_at, fmt::format("the metadata key '{}' appears twice", key));
    const std::uint64_t value_at = cursor.offset();
    GgufValue value = read_gguf_typed_value(cursor);
    if (key == "general.alignment") file.alignment = checked_alignment(cursor, value, value_at);
    file.metadata.push_back({std::move(key), std::move(value)});
  }
}

// Element count (dims' product, at most INT64_MAX as in ggml), then bytes.
std::uint64_t tensor_bytes(const GgufCursor& cursor, const GgufTensorInfo& t, std::uint64_t dims_at) {
  const std::uint64_t row = t.dims.empty() ? 1 : t.dims[0];
  if (row % t.type.block_size != 0) {
    cursor.fail(dims_at, fmt::format("tensor '{}': a row of {} elements is not a whole number of {} blocks of {}",
                                     t.name, row, t.type.name, t.type.block_size));
  }
  std::uint64_t elements = 1;
  for (std::uint64_t d : t.dims) {
    if (d != 0 && elements > kMaxElements / d) {
      cursor.fail(dims_at, fmt::format("tensor '{}': the element count overflows", t.name));
    }
    elements *= d;
  }
  const std::uint64_t blocks = elements / t.type.block_size;
  if (blocks > std::numeric_limits<std::uint64_t>::max() / t.type.type_size) {
    cursor.fail(dims_at, fmt::format("tensor '{}': the byte size overflows", t.name));
  }
  return blocks * t.type.type_size;
}

GgufTensorInfo read_tensor_info(GgufCursor& cursor, InfoOffsets& where) {
  GgufTensorInfo t;
  where.info = cursor.offset();
  t.name = cursor.read_string("tensor name");
  const std::uint64_t n_dims_at = cursor.offset();
  const auto n_dims = cursor.read<std::uint32_t>("n_dims");
  if (n_dims > kMaxDims) {
    cursor.fail(n_dims_at, fmt::format("tensor '{}' has {} dimensions (ggml allows at most {})", t.name, n_dims,
                                       kMaxDims));
  }
  const std::uint64_t dims_at = cursor.offset();
  t.dims.resize(n_dims);
  cursor.read_array(t.dims.data(), n_dims, sizeof(std::uint64_t), "tensor dims");
  for (std::uint32_t i = 0; i < n_dims; ++i) {
    if (t.dims[i] > kMaxElements) {
      cursor.fail(dims_at + 8 * i, fmt::format("tensor '{}': dimension {} is negative or over 2^63", t.name, i));
    }
  }
  const std::uint64_t type_at = cursor.offset();
  const auto type_id = cursor.read<std::uint32_t>("ggml type");
  const std::optional<GgmlType> type = ggml_type(type_id);
  if (!type) cursor.fail(type_at, fmt::format("tensor '{}' has unknown ggml type {}", t.name, type_id));
  t.type = *type;
  where.offset_field = cursor.offset();
  t.offset = cursor.read<std::uint64_t>("tensor offset");
  t.bytes = tensor_bytes(cursor, t, dims_at);
  return t;
}

void read_tensor_infos(GgufCursor& cursor, std::uint64_t count, GgufFile& file, std::vector<InfoOffsets>& where) {
  cursor.check_count(count, kMinTensorInfoSize, "tensor infos");
  std::unordered_set<std::string> names;
  for (std::uint64_t i = 0; i < count; ++i) {
    InfoOffsets at;
    GgufTensorInfo t = read_tensor_info(cursor, at);
    if (!names.insert(t.name).second) cursor.fail(at.info, fmt::format("the tensor name '{}' appears twice", t.name));
    file.tensors.push_back(std::move(t));
    where.push_back(at);
  }
}

// Each tensor aligned and inside the data, and no two sharing a byte.
void check_tensor_ranges(const GgufCursor& cursor, const GgufFile& file, const std::vector<InfoOffsets>& where) {
  const std::uint64_t data_size = cursor.file_size() > file.data_offset ? cursor.file_size() - file.data_offset : 0;
  for (std::size_t i = 0; i < file.tensors.size(); ++i) {
    const GgufTensorInfo& t = file.tensors[i];
    if (t.offset % file.alignment != 0) {
      cursor.fail(where[i].offset_field, fmt::format("tensor '{}': offset {} is not a multiple of the alignment {}",
                                                     t.name, t.offset, file.alignment));
    }
    if (t.offset > data_size || t.bytes > data_size - t.offset) {
      cursor.fail(where[i].offset_field,
                  fmt::format("tensor '{}': bytes [{}, +{}) of the data run past its end (the data has {} bytes, "
                              "from byte {} of the file)",
                              t.name, t.offset, t.bytes, data_size, file.data_offset));
    }
  }
  std::vector<std::size_t> order(file.tensors.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return file.tensors[a].offset < file.tensors[b].offset; });
  const GgufTensorInfo* previous = nullptr;
  for (std::size_t i : order) {
    const GgufTensorInfo& t = file.tensors[i];
    if (t.bytes == 0) continue;  // an empty tensor holds no byte to share
    if (previous != nullptr && previous->offset + previous->bytes > t.offset) {
      cursor.fail(where[i].offset_field, fmt::format("tensor '{}' (data bytes [{}, {})) overlaps tensor '{}' ([{}, {}))",
                                                     t.name, t.offset, t.offset + t.bytes, previous->name,
                                                     previous->offset, previous->offset + previous->bytes));
    }
    previous = &t;
  }
}

}  // namespace

GgufFile parse_gguf_prefix(std::span<const std::byte> prefix, std::uint64_t file_size,
                           const std::filesystem::path& name) {
  GgufCursor cursor(prefix, file_size, name);
  GgufFile file;
  file.version = read_version(cursor);
  const auto tensor_count = cursor.read<std::uint64_t>("tensor count");
  const auto kv_count = cursor.read<std::uint64_t>("key/value count");
  read_metadata(cursor, kv_count, file);
  std::vector<InfoOffsets> where;
  read_tensor_infos(cursor, tensor_count, file, where);

  // The header ends at most at the cap, so aligning up cannot overflow.
  const std::uint64_t header_end = cursor.offset();
  file.data_offset = (header_end + file.alignment - 1) / file.alignment * file.alignment;
  check_tensor_ranges(cursor, file, where);
  return file;
}

GgufFile parse_gguf(std::span<const std::byte> prefix, std::uint64_t file_size, const std::filesystem::path& name) {
  try {
    return parse_gguf_prefix(prefix, file_size, name);
  } catch (const GgufPrefixTooShort& more) {
    throw InvalidArgument(fmt::format("parse_gguf({}): the prefix holds {} bytes but the header needs at least {}",
                                      name.string(), prefix.size(), more.needed));
  }
}

}  // namespace nuvec::io
