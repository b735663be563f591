// ggml's tensor types: ids from ggml.h's enum ggml_type, elements and bytes
// per block from ggml.c's type_traits (blck_size, type_size), checked
// against the block structs of ggml-common.h (llama.cpp, 2025-26). Ids
// removed from ggml (4, 5: Q4_2, Q4_3; 31..33: Q4_0_4_4.. ; 36..38:
// IQ4_NL_4_4..) are unknown here as they are in llama.cpp.
#include "nuvec/io/gguf.h"

namespace nuvec::io {
namespace {

constexpr std::uint32_t QK_K = 256;  // elements in a K-quant super-block

constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", 1, 4, DType::F32},
    {1, "F16", 1, 2, DType::F16},
    {2, "Q4_0", 32, 18, DType::GGML_BLOCK},   // f16 d + 16 bytes of nibbles
    {3, "Q4_1", 32, 20, DType::GGML_BLOCK},   // f16 d, m + 16
    {6, "Q5_0", 32, 22, DType::GGML_BLOCK},   // f16 d + 4 high bits + 16
    {7, "Q5_1", 32, 24, DType::GGML_BLOCK},   // f16 d, m + 4 + 16
    {8, "Q8_0", 32, 34, DType::GGML_BLOCK},   // f16 d + 32
    {9, "Q8_1", 32, 36, DType::GGML_BLOCK},   // f16 d, s + 32
    {10, "Q2_K", QK_K, 84, DType::GGML_BLOCK},
    {11, "Q3_K", QK_K, 110, DType::GGML_BLOCK},
    {12, "Q4_K", QK_K, 144, DType::GGML_BLOCK},
    {13, "Q5_K", QK_K, 176, DType::GGML_BLOCK},
    {14, "Q6_K", QK_K, 210, DType::GGML_BLOCK},
    {15, "Q8_K", QK_K, 292, DType::GGML_BLOCK},  // f32 d + 256 + 16 int16 sums
    {16, "IQ2_XXS", QK_K, 66, DType::GGML_BLOCK},
    {17, "IQ2_XS", QK_K, 74, DType::GGML_BLOCK},
    {18, "IQ3_XXS", QK_K, 98, DType::GGML_BLOCK},
    {19, "IQ1_S", QK_K, 50, DType::GGML_BLOCK},
    {20, "IQ4_NL", 32, 18, DType::GGML_BLOCK},
    {21, "IQ3_S", QK_K, 110, DType::GGML_BLOCK},
    {22, "IQ2_S", QK_K, 82, DType::GGML_BLOCK},
    {23, "IQ4_XS", QK_K, 136, DType::GGML_BLOCK},
    {24, "I8", 1, 1, DType::I8},
    {25, "I16", 1, 2, DType::I16},
    {26, "I32", 1, 4, DType::I32},
    {27, "I64", 1, 8, DType::I64},
    {28, "F64", 1, 8, DType::F64},
    {29, "IQ1_M", QK_K, 56, DType::GGML_BLOCK},
    {30, "BF16", 1, 2, DType::BF16},
    {34, "TQ1_0", QK_K, 54, DType::GGML_BLOCK},
    {35, "TQ2_0", QK_K, 66, DType::GGML_BLOCK},
    {39, "MXFP4", 32, 17, DType::GGML_BLOCK},  // e8m0 scale + 16
    {40, "NVFP4", 64, 36, DType::GGML_BLOCK},  // 4 e4m3 scales + 32
    {41, "Q1_0", 128, 18, DType::GGML_BLOCK},  // f16 d + 16 bytes of bits
    {42, "Q2_0", 64, 18, DType::GGML_BLOCK},   // f16 d + 16
};

}  // namespace

std::optional<GgmlType> ggml_type(std::uint32_t id) {
  for (const GgmlType& t : kGgmlTypes) {
    if (t.id == id) return t;
  }
  return std::nullopt;
}

}  // namespace nuvec::io
