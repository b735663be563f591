// The scratch each linear() path needs, from its blocking
// (linear_blocking.h): what linear_workspace_bytes() reports, and where the
// kernels place their packed buffers in it. Plain arithmetic, in a file
// compiled for any x86-64, so that every path's size can be asked, and is
// tested, on any CPU.
#pragma once

#include <cstddef>

#include "lm/kernels/cpu_isa.h"
#include "lm/kernels/linear.h"
#include "lm/kernels/linear_blocking.h"

namespace nuvec::lm::kernels::detail {

// The workspace of a GEMM with blocking b (linear_simd.inc's gemm): one
// packed block of x (gemm_a_bytes, first), then the packed W panels of one
// chunk of NB columns. Bounded by the blocking whatever m and n are, and
// independent of the thread count (tasks pack into their own part of the
// chunk, not into per-thread buffers).
std::size_t gemm_a_bytes(const GemmBlocking& b, std::size_t m);
std::size_t gemm_workspace(const GemmBlocking& b, std::size_t m, std::size_t n);

// Each path's workspace for an m x k by n x k product (0 for m <=
// kStreamingRows, which streams the weights), and the one of `isa`'s path.
std::size_t workspace_avx2(std::size_t m, std::size_t k, std::size_t n, WeightType type);
std::size_t workspace_avx512(std::size_t m, std::size_t k, std::size_t n, WeightType type);
std::size_t workspace_avx512bf16(std::size_t m, std::size_t k, std::size_t n, WeightType type);
std::size_t workspace_amx(std::size_t m, std::size_t k, std::size_t n, WeightType type);
std::size_t workspace_with(Isa isa, std::size_t m, std::size_t k, std::size_t n, WeightType type);

// The AMX path's packed block of x: steps of 32 k in a row of it, rows per
// block (as many as keep the block within 4 MiB, in whole micro-blocks, at
// least one), and its bytes (at most 4 MiB for k <= 65536, 64 * k beyond).
std::size_t amx_steps(std::size_t k);
std::size_t amx_x_block_rows(std::size_t m, std::size_t k);
std::size_t amx_x_block_bytes(std::size_t m, std::size_t k);

}  // namespace nuvec::lm::kernels::detail
