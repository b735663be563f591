// Tensors as checkpoints hold them: a name, a dtype, a shape and bytes that
// live in a mapping or an allocator buffer, shared with every other view of
// the same storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec::io {

// Every dtype of safetensors, plus MLX's C64, plus ggml's quantized block
// types as raw blocks (see gguf.h).
enum class DType : std::uint8_t {
  BOOL, U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64, F8_E4M3, F8_E5M2, C64,
  GGML_BLOCK,  // a ggml quantized type: bytes are whole blocks (gguf.h says which)
};

// The safetensors name ("BF16"), and back (empty if unknown).
std::string_view dtype_name(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);
// Bytes per element; 0 for GGML_BLOCK (its size is per block).
std::size_t dtype_size(DType dtype);

// What keeps a view's bytes alive: a Mapping (nuvec/mapped_file.h) or a
// Buffer. Views hold it by shared_ptr; the storage goes when the last does.
using Storage = std::shared_ptr<const void>;

struct TensorView {
  std::string name;
  DType dtype = DType::U8;
  std::vector<std::uint64_t> shape;
  std::span<const std::byte> bytes;
  Storage storage;  // owns `bytes`

  std::uint64_t element_count() const;
};

}  // namespace nuvec::io
