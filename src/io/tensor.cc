#include "nuvec/io/tensor.h"

#include <array>

namespace nuvec::io {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeInfo, 17> kDTypes = {{
    {DType::BOOL, "BOOL", 1},   {DType::U8, "U8", 1},       {DType::I8, "I8", 1},
    {DType::U16, "U16", 2},     {DType::I16, "I16", 2},     {DType::U32, "U32", 4},
    {DType::I32, "I32", 4},     {DType::U64, "U64", 8},     {DType::I64, "I64", 8},
    {DType::F16, "F16", 2},     {DType::BF16, "BF16", 2},   {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},     {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E5M2, "F8_E5M2", 1},
    {DType::C64, "C64", 8},     {DType::GGML_BLOCK, "GGML_BLOCK", 0},
}};

}  // namespace

std::string_view dtype_name(DType dtype) { return kDTypes[static_cast<std::size_t>(dtype)].name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name && info.dtype != DType::GGML_BLOCK) return info.dtype;
  }
  return std::nullopt;
}

std::size_t dtype_size(DType dtype) { return kDTypes[static_cast<std::size_t>(dtype)].size; }

std::uint64_t TensorView::element_count() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;  // parsers guarantee no overflow
  return n;
}

}  // namespace nuvec::io
