// GGUF files (llama.cpp's format, version 3; version 2 has the same layout and
// is read too), treated as hostile input.
//
// Layout, all little-endian: "GGUF", uint32 version, uint64 tensor count,
// uint64 key/value count; the key/values (string key, uint32 value type,
// value); the tensor infos (string name, uint32 n_dims <= 4, n_dims uint64
// dims, uint32 ggml type, uint64 offset); padding up to `general.alignment`
// (a power of two, default 32); then the tensor data, each tensor at its
// offset from the start of the data. Strings are a uint64 length and that
// many bytes; arrays a uint32 element type, a uint64 count and the elements.
//
// ggml orders dims innermost first (dims[0] is the length of a row); tensor
// views give the shape outermost first, as numpy and safetensors do, so
// view.shape is the dims reversed.
//
// Quantized tensors are exposed as raw blocks: DType::GGML_BLOCK, with the
// ggml type (id, name, elements per block, bytes per block) beside the view.
// F32, F16, BF16, F64 and I8..I64 map to the ordinary DTypes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "nuvec/io/footprint.h"
#include "nuvec/io/tensor.h"

namespace nuvec {
class Device;
}

namespace nuvec::io {

// ---- ggml tensor types ------------------------------------------------------

// One ggml type as ggml.c's type_traits describe it.
struct GgmlType {
  std::uint32_t id = 0;          // the number in the file (GGML_TYPE_Q4_K = 12)
  std::string_view name;         // "Q4_K"
  std::uint32_t block_size = 1;  // elements per block (1 for plain types)
  std::uint32_t type_size = 0;   // bytes per block
  DType dtype = DType::GGML_BLOCK;  // the plain DType, or GGML_BLOCK for quantized types

  bool quantized() const { return dtype == DType::GGML_BLOCK; }
  // What a view of its data needs its address aligned to, to be used in
  // place: the largest power of two dividing type_size, at most 8 (ggml's
  // block structs hold at most 8-byte fields).
  std::uint64_t address_alignment() const { return std::min<std::uint64_t>(type_size & (~type_size + 1), 8); }
  friend bool operator==(const GgmlType&, const GgmlType&) = default;
};

// The ggml type with this id; empty for ids that ggml never had or removed
// (4, 5, 31..33, 36..38: their files no longer load in llama.cpp either).
std::optional<GgmlType> ggml_type(std::uint32_t id);

// ---- metadata -----------------------------------------------------------------

// GGUF value types, numbered as in the file.
enum class GgufValueType : std::uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType type);  // "uint32"; "?" if out of range

// An array: its element type and elements, one typed vector per element
// type. The variant's index is the element type's number, as GgufValue's is.
struct GgufArray {
  using Elements = std::variant<std::vector<std::uint8_t>, std::vector<std::int8_t>, std::vector<std::uint16_t>,
                                std::vector<std::int16_t>, std::vector<std::uint32_t>, std::vector<std::int32_t>,
                                std::vector<float>, std::vector<bool>, std::vector<std::string>,
                                std::vector<GgufArray>,  // arrays of arrays
                                std::vector<std::uint64_t>, std::vector<std::int64_t>, std::vector<double>>;
  Elements elements;

  GgufValueType element_type() const { return static_cast<GgufValueType>(elements.index()); }
  std::size_t size() const;
  friend bool operator==(const GgufArray&, const GgufArray&) = default;
};

// One metadata value; index() is its GgufValueType's number.
using GgufValue = std::variant<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t,
                               float, bool, std::string, GgufArray, std::uint64_t, std::int64_t, double>;

inline GgufValueType gguf_value_type(const GgufValue& value) { return static_cast<GgufValueType>(value.index()); }

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

// ---- the file -------------------------------------------------------------------

struct GgufTensorInfo {
  std::string name;
  std::vector<std::uint64_t> dims;  // ggml order: dims[0] is innermost
  GgmlType type;
  std::uint64_t offset = 0;  // from the start of the data (GgufFile::data_offset)
  std::uint64_t bytes = 0;   // element count / block_size * type_size

  // The shape outermost first: dims reversed.
  std::vector<std::uint64_t> shape() const { return {dims.rbegin(), dims.rend()}; }
};

// What parse_gguf found: everything but the tensor data.
struct GgufFile {
  std::uint32_t version = 3;
  std::vector<GgufKeyValue> metadata;   // in file order, keys unique
  std::vector<GgufTensorInfo> tensors;  // in file order, names unique
  std::uint64_t alignment = 32;         // general.alignment, or the default
  std::uint64_t data_offset = 0;        // where the data starts: the header's end, aligned up

  // The value under `key`; nullptr if there is none.
  const GgufValue* find(std::string_view key) const;
  // True when `tensor` (one of `tensors`) starts at a file offset that is a
  // multiple of its type's address_alignment(), or has no bytes: a load maps
  // the file only when every tensor is.
  bool tensor_aligned(const GgufTensorInfo& tensor) const {
    return tensor.bytes == 0 || (data_offset + tensor.offset) % tensor.type.address_alignment() == 0;
  }
};

// The default alignment and the caps on what a header may hold. A header is
// everything before the data; nuvec reads it into memory to parse it, so it
// is capped (llama.cpp's largest vocabularies take tens of MiB).
inline constexpr std::uint64_t kGgufDefaultAlignment = 32;
inline constexpr std::uint64_t kGgufMaxHeaderSize = std::uint64_t{256} << 20;
inline constexpr std::uint32_t kGgufMaxArrayDepth = 8;  // arrays of arrays of ...

// Parses a GGUF header. `prefix` is the start of the file, at least its
// whole header (the whole file will do); `file_size` is the whole file's
// size; `name` only labels errors. Pure: no I/O, no device. Checks every
// count and length against the bytes left before trusting it (nothing is
// allocated by an unchecked number), every value and ggml type, n_dims <= 4,
// dims whose rows are whole blocks and whose byte size fits in 64 bits,
// offsets aligned and inside the data, no two tensors overlapping, no key or
// tensor name twice, general.alignment a power of two. FormatError (file,
// byte offset, reason) for any of these; InvalidArgument if `prefix` ends
// inside the header while the file does not.
GgufFile parse_gguf(std::span<const std::byte> prefix, std::uint64_t file_size, const std::filesystem::path& name);

// Reads and parses the header of the GGUF file at `path`, nothing else:
// no mapping, no buffer, no statistic changes (so that a loader can refuse
// a file before it maps it). FormatError / IoError as load_gguf.
GgufFile read_gguf_header(const std::filesystem::path& path);

// What load_gguf(path) adds to a fresh CPU device's statistics, from the
// header alone: the whole file's mapping_size when every tensor is aligned
// (the mapped path), else the allocation_size of the one buffer the tensors
// are read into (each at a 256-byte boundary); nothing for a file without
// tensor data. FormatError / IoError as read_gguf_header.
Footprint gguf_footprint(const std::filesystem::path& path);

// A loaded GGUF file: its header and a view of each tensor, in the header's
// order (tensors[i] is header.tensors[i]; for quantized ones the view's dtype
// is GGML_BLOCK and header.tensors[i].type says which blocks).
struct GgufModel {
  GgufFile header;
  std::vector<TensorView> tensors;

  // The tensor named `name`; nullptr if there is none.
  const TensorView* find(std::string_view name) const;
};

// Loads a GGUF file: maps it whole (counted in `mapped`) and gives each
// tensor a view into the mapping. If some tensor's data is not aligned to its
// element (general.alignment below 8 allows that), the data is instead read
// once into one buffer where each tensor starts at a 256-byte boundary.
// FormatError for a malformed file (and one that changes size while
// loading), IoError if it cannot be read, OutOfMemory past the memory limit;
// a refusal changes no statistic.
GgufModel load_gguf(Device& device, const std::filesystem::path& path);

}  // namespace nuvec::io
