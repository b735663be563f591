// The linear-layer kernel of the LM runtime: y = x · Wᵀ, with W stored as
// Hugging Face's nn.Linear stores it (row-major [n][k], one output per row),
// in the checkpoint's own dtype and used in place from the mapping.
//
// One entry point so the model code never cares how it is computed: the
// implementation picks AVX-512 (BF16 where the CPU has it) or AVX2 at run
// time, and splits the work over the kernel thread pool.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nuvec::lm::kernels {

enum class WeightType { f32, f16, bf16 };

// y[i][j] = sum_p x[i][p] * w[j][p] for i < m, j < n, p < k. x is [m][k]
// f32 (row stride k), y is [m][n] f32 (row stride n) and is overwritten. w is
// [n][k] of `type`, row stride k elements. x and y do not overlap w.
// `workspace` must hold linear_workspace_bytes(m, k, n, type) bytes (the
// caller takes it from the device allocator, so the statistics see it); it
// may be null when that is 0.
void linear(const float* x, std::size_t m, std::size_t k, const void* w, WeightType type,
            std::size_t n, float* y, void* workspace);

// Scratch the kernel needs for this shape (conversion or packing), in bytes.
std::size_t linear_workspace_bytes(std::size_t m, std::size_t k, std::size_t n, WeightType type);

// How many threads the kernels use (default: the CPUs this process may run on).
void set_threads(int threads);
int threads();

}  // namespace nuvec::lm::kernels
