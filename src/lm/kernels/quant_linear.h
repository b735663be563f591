// Products with quantized weights used in place, ggml's blocks (llama.cpp's
// GGUF types) and MLX's affine groups: y = x · Wᵀ with W [n][k] stored as
// rows of blocks, each block dequantized as it is read (to int8 quants and
// one f32 scale and offset per 16 weights). Nothing of W is copied or kept
// dequantized: the f32 path widens the quants to f32 in vector registers and
// multiplies them by the f32 activations, its only scratch one block (256
// bytes of quants) on the stack of each thread; the integer path (AVX-512
// VNNI, given a workspace) rounds the activations to int8 in that workspace
// and sums the products in integers.
//
// What that means for the numbers: each weight is the exact value the
// format's dequantization gives (d * scale * q - dmin * min, in f32). On the
// f32 path the sums are f32 as linear()'s; llama.cpp instead rounds the
// activations to 8 bits (Q8_0/Q8_K) and sums integers, so its products
// differ from these by its activation rounding (relative 2^-8 per activation
// at most), as the integer path's do by its own.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nuvec::lm::kernels {

// ggml's block types that the runtime computes with (ggml-common.h).
// affine4 / affine8: MLX's affine quantization (quant_linear_affine).
enum class QuantType { q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, affine4, affine8 };

// Weights per block (32 or 256) and bytes per block.
std::size_t quant_block_elements(QuantType type);
std::size_t quant_block_bytes(QuantType type);

// y[i][j] = sum_p x[i][p] * dequant(w)[j][p]: x [m][k] f32, y [m][n] f32
// (overwritten), w n rows of k / quant_block_elements(type) blocks each (k
// a multiple of the block size), only read. Runs on the kernel thread pool.
// InvalidArgument for null pointers or a k that is not whole blocks.
//
// On CPUs with AVX-512 VNNI the activations are first rounded to int8 per
// 32 values in `workspace` (quant_linear_workspace_bytes(m, k) bytes) and
// the products summed in integers, as llama.cpp does: each activation is
// then off by at most max|x| / 254 of its block of 32. With a null workspace
// (or NUVEC_QUANT_DOT=off) the products are the f32 ones described above.
void quant_linear(const float* x, std::size_t m, std::size_t k, const void* w, QuantType type, std::size_t n,
                  float* y, void* workspace = nullptr);

// Bytes of workspace quant_linear() uses for m rows of k (0 where this CPU
// has no integer path).
std::size_t quant_linear_workspace_bytes(std::size_t m, std::size_t k);

// MLX's affine quantization (mlx.core.quantize, "affine" mode): w [n][k]
// packed into uint32 words of 32 / bits values (bits 4 or 8), with a scale
// and a bias per group of `group` values along a row (32, 64 or 128), each
// [n][k / group] of f16 or bf16; weight = scale * q + bias.
struct AffineScales {
  const void* scales = nullptr;
  const void* biases = nullptr;
  std::size_t group = 0;
  bool bf16 = false;  // the scales' and biases' type: bf16, else f16
};

// quant_linear() for MLX weights (type affine4 or affine8): the same paths
// (workspace and integer products alike). InvalidArgument for a group not
// 32, 64 or 128 or a k that is not whole groups and a multiple of 64.
void quant_linear_affine(const float* x, std::size_t m, std::size_t k, const void* w, QuantType type,
                         const AffineScales& scales, std::size_t n, float* y, void* workspace = nullptr);

// One row of k weights (whole blocks) dequantized into out[k] (the
// embedding lookup of a quantized token table).
void dequantize_row(QuantType type, const void* row, std::size_t k, float* out);
// Row j of MLX weights dequantized into out[k].
void dequantize_affine_row(QuantType type, const void* w, const AffineScales& scales, std::size_t k, std::size_t j,
                           float* out);

}  // namespace nuvec::lm::kernels
