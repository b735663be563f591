// The linear-layer kernel of the LM runtime: y = x · Wᵀ, with W stored as
// Hugging Face's nn.Linear stores it (row-major [n][k], one output per row),
// in the checkpoint's own dtype and used in place from the mapping.
//
// One entry point so the model code never cares how it is computed: the
// implementation picks AVX-512 (BF16 where the CPU has it) or AVX2 at run
// time, and splits the work over the kernel thread pool (thread_pool.h).
//
// How it computes, and what that means for the numbers:
// - Few rows (m <= kStreamingRows, decode): every weight row is streamed once
//   from memory, converted to f32 in registers and multiplied by the f32
//   activations, so the result is the f32 computation (sums reassociated)
//   whatever the weight dtype. This path runs at the memory bandwidth.
// - Many rows (prefill), f32 and f16 weights: blocked GEMM in f32 with FMA;
//   f16 weights are widened to f32 exactly while they are packed.
// - Many rows, bf16 weights, on CPUs with AVX-512 BF16 and Precision::fast
//   (the default): the activations are rounded to bf16 (round to nearest
//   even) and multiplied with vdpbf16ps, summing in f32. Twice the speed of
//   f32 FMA; each product carries its activation's rounding error (relative
//   2^-8 at most), and these add up like a random walk: an output differs
//   from the f32 computation by about 2^-8/sqrt(3) · sqrt(sum_p (x_p w_p)^2),
//   some 2e-3 of its typical size when the products have random signs, and
//   never by more than 2^-8 · sum_p |x_p w_p| (the bound the tests check).
//   Precision::exact computes them in f32 like the other dtypes, at the f32
//   GEMM's speed (half).
// - The same, on CPUs with AMX-BF16 where Linux grants the tile data
//   (linear_amx.cc): the products run on the tile unit, with the weights
//   loaded as tiles straight from the mapping and only x packed; the same
//   rounding and bound, the sums in another order.
// Accumulation is in f32 throughout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lm/kernels/thread_pool.h"  // set_threads(), threads(), parallel_for()

namespace nuvec::lm::kernels {

enum class WeightType { f32, f16, bf16 };

// How activations meet bf16 weights in the many-row path (see above); it has
// no effect on f32 and f16 weights, on the few-row path, or on CPUs without
// AVX-512 BF16, which always compute in f32.
enum class Precision { fast, exact };

// Up to this many rows of x, linear() streams the weights once (GEMV-like);
// above it, it runs the blocked GEMM.
inline constexpr std::size_t kStreamingRows = 4;

// y[i][j] = sum_p x[i][p] * w[j][p] for i < m, j < n, p < k. x is [m][k]
// f32 (row stride k), y is [m][n] f32 (row stride n) and is overwritten. w is
// [n][k] of `type`, row stride k elements; it is only read, so it may be a
// read-only mapping, and needs no alignment beyond its element size. x and y
// do not overlap each other or w. `workspace` must hold
// linear_workspace_bytes(m, k, n, type) bytes (the caller takes it from the
// device allocator, so the statistics see it), aligned to 64 bytes; it may be
// null when that is 0. k == 0 gives y = 0.
// Runs on the kernel thread pool; called inside a parallel_for body, or while
// another thread's loop holds the pool, it runs on the calling thread alone.
// Throws InvalidArgument for null x, w or y, a missing workspace, or a shape
// whose element counts overflow size_t.
void linear(const float* x, std::size_t m, std::size_t k, const void* w, WeightType type,
            std::size_t n, float* y, void* workspace, Precision precision = Precision::fast);

// Scratch the kernel needs for this shape (conversion and packing buffers),
// in bytes, for either precision: 0 for m <= kStreamingRows; otherwise one
// packed block of x and the packed weights of one chunk of columns, bounded by
// the blocking whatever m and n are: at most 5.5 MiB on AVX-512 (1.5 MiB of x,
// 4 MiB of W; less when m < 768 or n < 2048), 2.2 MiB on AVX2. It does not
// depend on threads().
std::size_t linear_workspace_bytes(std::size_t m, std::size_t k, std::size_t n, WeightType type);

// linear_isa(): which instruction set linear() uses (nuvec/lm/kernels.h).

}  // namespace nuvec::lm::kernels
