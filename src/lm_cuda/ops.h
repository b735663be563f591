// The element-wise and row-wise operations of a Llama-family decoder on the
// GPU, each the CPU's (src/lm/ops.h, rope.h) on f16 or bf16 activations:
// arithmetic in f32, each result rounded once to the activations' dtype.
// Arrays are device memory, rows row-major; each call queues one kernel on
// `stream` and waits for nothing. InvalidArgument for another dtype or a
// size past the kernels' ints.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "nuvec/lm/tensor.h"

namespace nuvec::lm::gpu {

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, for `rows` rows of `dim`
// (ops::rms_norm). x, weight and out of `dtype`; x and out may be the same.
void rms_norm(const void* x, std::size_t rows, std::size_t dim, const void* weight, double eps, void* out,
              DType dtype, cudaStream_t stream);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + e^-g) (ops::swiglu, with
// expf: within 2 ulp, as the CPU's vector exp is). out may be gate.
void swiglu(const void* gate, const void* up, void* out, std::size_t count, DType dtype, cudaStream_t stream);

// Rotary position embeddings: rope::apply's rotate_half pairs (i with
// i + head_dim/2) or rope::apply_interleaved's (2i with 2i+1, llama.cpp's
// order for GGUF Llama files).
enum class RopeLayout { half_split, interleaved };

// Rotates, in place, `heads` heads of head_dim in each of `rows` rows of x
// (row stride `row_stride` elements), row r at position first + r. The
// angles are rope::angles': position × frequency in f32, then its cosine and
// sine (sincosf: within 2 ulp of the CPU's correctly rounded ones), from
// inv_freq, the head_dim / 2 inverse frequencies (rope::inverse_frequencies)
// on the device; no table of angles is kept. With `first_at` (device
// memory), the kernel reads row 0's position there when it runs (a decode
// step's, replayed as a CUDA graph); `first` is then only checked.
void rope(void* x, std::size_t rows, std::size_t row_stride, std::size_t heads, std::size_t head_dim,
          const float* inv_freq, std::size_t first, RopeLayout layout, DType dtype, cudaStream_t stream,
          const std::int32_t* first_at = nullptr);

}  // namespace nuvec::lm::gpu
