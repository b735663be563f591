// The .npy preamble and header: version, lengths, descr, shape and the data's
// size, each checked against the file before anything trusts it.
#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "nuvec/input_file.h"
#include "io/npy/npy_dict.h"
#include "nuvec/error.h"
#include "nuvec/io/npy.h"

namespace nuvec::io {
namespace {

constexpr std::array<unsigned char, 6> kMagic = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kMagicVersionSize = 8;  // magic + major + minor

// The one-character kind and the item size after the byte-order character.
struct DescrType {
  std::string_view code;
  DType dtype;
};
// numpy writes complex128 as 'c16': there is no DType for it, so it is refused
// with every other code not listed.
constexpr std::array<DescrType, 13> kDescrTypes = {{
    {"b1", DType::BOOL}, {"i1", DType::I8},  {"u1", DType::U8},  {"i2", DType::I16}, {"u2", DType::U16},
    {"i4", DType::I32},  {"u4", DType::U32}, {"i8", DType::I64}, {"u8", DType::U64}, {"f2", DType::F16},
    {"f4", DType::F32},  {"f8", DType::F64}, {"c8", DType::C64},
}};

std::optional<DType> descr_type(std::string_view code) {
  for (const DescrType& t : kDescrTypes) {
    if (t.code == code) return t.dtype;
  }
  return std::nullopt;
}

std::uint32_t read_le(std::span<const std::byte> bytes, std::size_t offset, std::size_t width) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < width; ++i) value |= std::to_integer<std::uint32_t>(bytes[offset + i]) << (8 * i);
  return value;
}

// 10 bytes before the header in version 1.0 (2-byte length), 12 in 2.0 and 3.0.
std::size_t preamble_size(std::uint8_t major) { return major == 1 ? 10 : 12; }

struct Descr {
  DType dtype;
  bool big_endian;
};

Descr parse_descr(std::string_view descr, std::uint64_t offset, const std::filesystem::path& name) {
  const auto refuse = [&](std::string_view why) {
    format_error(name, offset,
                 fmt::format("unsupported npy dtype '{}': {} (nuvec reads bool, int8..int64, uint8..uint64, "
                             "float16/32/64 and complex64)",
                             descr.substr(0, 32), why));
  };
  if (descr.size() < 2) refuse("not a dtype string");
  const char order = descr[0];
  if (order != '<' && order != '>' && order != '|') refuse("the first character must be '<', '>' or '|'");
  const std::optional<DType> dtype = descr_type(descr.substr(1));
  if (!dtype) refuse("unknown type");
  const std::size_t size = dtype_size(*dtype);
  // '|' means "byte order does not apply": numpy writes it for one-byte types only.
  if (order == '|' && size != 1) refuse("'|' (no byte order) on a multi-byte type");
  return {*dtype, order == '>' && size != 1};
}

// prod(shape) * itemsize, or empty on overflow.
std::optional<std::uint64_t> data_size(const std::vector<std::uint64_t>& shape, std::uint64_t itemsize) {
  if (std::find(shape.begin(), shape.end(), 0u) != shape.end()) return 0;
  std::uint64_t bytes = itemsize;
  for (std::uint64_t d : shape) {
    if (bytes > UINT64_MAX / d) return std::nullopt;
    bytes *= d;
  }
  return bytes;
}

}  // namespace

std::uint64_t npy_header_size(std::span<const std::byte> prefix, std::uint64_t file_size,
                              const std::filesystem::path& name) {
  const std::uint64_t have = std::min<std::uint64_t>(prefix.size(), file_size);
  const std::size_t magic_have = static_cast<std::size_t>(std::min<std::uint64_t>(have, kMagic.size()));
  for (std::size_t i = 0; i < magic_have; ++i) {
    if (std::to_integer<unsigned char>(prefix[i]) != kMagic[i]) {
      format_error(name, i, "not an npy file: it does not start with the magic \"\\x93NUMPY\"");
    }
  }
  if (file_size < kMagicVersionSize) {
    format_error(name, file_size,
                 fmt::format("the file ends inside the npy preamble ({} bytes; it starts with 10 or 12)", file_size));
  }
  if (have < kMagicVersionSize) {
    throw InvalidArgument(fmt::format("npy_header_size({}): pass at least the first 12 bytes", name.string()));
  }
  const auto major = std::to_integer<std::uint8_t>(prefix[6]);
  const auto minor = std::to_integer<std::uint8_t>(prefix[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    format_error(name, 6,
                 fmt::format("unsupported npy format version {}.{} (nuvec reads 1.0, 2.0 and 3.0)", major, minor));
  }
  const std::size_t preamble = preamble_size(major);
  if (file_size < preamble) {
    format_error(name, file_size,
                 fmt::format("the file ends inside the npy preamble ({} bytes; version {}.0 needs {})", file_size,
                             major, preamble));
  }
  if (have < preamble) {
    throw InvalidArgument(fmt::format("npy_header_size({}): pass at least the first 12 bytes", name.string()));
  }
  const std::uint64_t header_length = read_le(prefix, kMagicVersionSize, preamble - kMagicVersionSize);
  if (header_length > kNpyMaxHeaderLength) {
    format_error(name, kMagicVersionSize,
                 fmt::format("npy header length {} is over nuvec's cap of {} bytes", header_length,
                             kNpyMaxHeaderLength));
  }
  if (header_length > file_size - preamble) {
    format_error(name, kMagicVersionSize,
                 fmt::format("npy header length {} runs past the end of the file ({} bytes)", header_length,
                             file_size));
  }
  return preamble + header_length;
}

NpyHeader parse_npy_header(std::span<const std::byte> prefix, std::uint64_t file_size,
                           const std::filesystem::path& name) {
  const std::uint64_t header_end = npy_header_size(prefix, file_size, name);
  if (prefix.size() < header_end) {
    throw InvalidArgument(fmt::format("parse_npy_header({}): the prefix holds {} bytes but the header needs {}",
                                      name.string(), prefix.size(), header_end));
  }
  NpyHeader header;
  header.major_version = std::to_integer<std::uint8_t>(prefix[6]);
  header.minor_version = std::to_integer<std::uint8_t>(prefix[7]);
  const std::size_t preamble = preamble_size(header.major_version);
  const std::string_view text(reinterpret_cast<const char*>(prefix.data()) + preamble,
                              static_cast<std::size_t>(header_end - preamble));
  NpyDict dict = parse_npy_dict(text, preamble, name);

  const Descr descr = parse_descr(dict.descr, dict.descr_offset, name);
  header.dtype = descr.dtype;
  header.big_endian = descr.big_endian;
  header.fortran_order = dict.fortran_order;
  header.shape = std::move(dict.shape);
  header.data_offset = header_end;

  const std::optional<std::uint64_t> bytes = data_size(header.shape, dtype_size(header.dtype));
  if (!bytes) format_error(name, dict.shape_offset, "the shape's byte size overflows 64 bits");
  header.data_bytes = *bytes;
  const std::uint64_t remaining = file_size - header_end;
  if (*bytes > remaining) {
    format_error(name, file_size,
                 fmt::format("the data is truncated: shape and dtype need {} bytes after the header, the file has {}",
                             *bytes, remaining));
  }
  if (*bytes < remaining) {
    format_error(name, header_end + *bytes,
                 fmt::format("{} bytes follow the data (shape and dtype need {} bytes after the header, the file "
                             "has {})",
                             remaining - *bytes, *bytes, remaining));
  }
  return header;
}

}  // namespace nuvec::io
