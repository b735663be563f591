// Prefill attention: FlashAttention's loop on the CUDA cores. Block
// (query tile, query head) holds 32 query rows in shared memory and walks
// the keys its rows can see, 32 at a time: lane j of each warp scores key j
// of the tile against the warp's 8 rows, the warp folds the tile into each
// row's running maximum and sum (shuffles), and each lane adds the weighted
// value rows into the output dimensions it owns (lane, lane + 32, ...).
// Scores never leave registers, so memory does not grow with the square of
// the prompt. A tensor-core version (mma) is later work; this one is the
// reference the GPU path is tested with.
#include "cuda/cuda_error.h"
#include "lm_cuda/element.cuh"
#include "lm_cuda/launch.h"
#include "lm_cuda/warp_reduce.cuh"

namespace nuvec::lm::gpu {
namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 8;
constexpr int kRows = kWarps * kRowsPerWarp;  // query rows per block
constexpr int kKeys = 32;                     // keys per tile: one per lane
constexpr int kDimsPerLane = kMaxHeadDim / 32;

template <class T>
__global__ void __launch_bounds__(kWarps * 32)
    prefill_kernel(const T* q, const T* keys, const T* values, T* out, PrefillLaunch p) {
  extern __shared__ float shared[];
  const int hd = p.head_dim;
  const std::size_t q_stride = static_cast<std::size_t>(p.heads) * hd;  // q and out: [rows][heads * head_dim]
  const int key_stride = hd + 1;  // odd: lane j's key row starts in its own bank
  float* sq = shared;                    // [kRows][hd], scaled
  float* sk = sq + kRows * hd;           // [kKeys][hd + 1]
  float* sv = sk + kKeys * key_stride;   // [kKeys][hd]
  const int h = blockIdx.y, g = h / p.group;
  const int r0 = blockIdx.x * kRows;
  const int r_end = min(p.rows, r0 + kRows);
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const T* kh = keys + g * p.capacity * hd;
  const T* vh = values + g * p.capacity * hd;

  for (int i = t; i < kRows * hd; i += kWarps * 32) {
    const int row = r0 + i / hd;
    sq[i] = row < p.rows ? to_f32(q[static_cast<std::size_t>(row) * q_stride + h * hd + i % hd]) * p.scale : 0.0f;
  }
  // The keys any row of the block sees: from the first row's window to the last row.
  const int last_key = p.first + r_end - 1;
  const int first_key = p.window != 0 ? max(0, p.first + r0 - p.window + 1) : 0;
  const int w0 = r0 + warp * kRowsPerWarp;                  // the warp's first row
  const int w_last = p.first + min(p.rows, w0 + kRowsPerWarp) - 1;  // its last row's position

  float run_max[kRowsPerWarp], run_sum[kRowsPerWarp], o[kRowsPerWarp][kDimsPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    run_max[r] = -INFINITY;
    run_sum[r] = 0;
#pragma unroll
    for (int c = 0; c < kDimsPerLane; ++c) o[r][c] = 0;
  }

  for (int k0 = first_key; k0 <= last_key; k0 += kKeys) {
    __syncthreads();  // the last tile is used up (the first time: the queries are in)
    for (int i = t; i < kKeys * hd; i += kWarps * 32) {
      const int j = i / hd, d = i % hd, pos = k0 + j;
      const bool in = pos <= last_key;
      sk[j * key_stride + d] = in ? to_f32(kh[static_cast<std::size_t>(pos) * hd + d]) : 0.0f;
      sv[j * hd + d] = in ? to_f32(vh[static_cast<std::size_t>(pos) * hd + d]) : 0.0f;
    }
    __syncthreads();
    // A warp past the last row, or whose rows see none of this tile, waits for
    // the next tile (every thread still meets both barriers above).
    if (w0 >= p.rows || k0 > w_last) continue;

    const int key = k0 + lane;
    float s[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0;
    for (int d = 0; d < hd; ++d) {
      const float kd = sk[lane * key_stride + d];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) s[r] += sq[(warp * kRowsPerWarp + r) * hd + d] * kd;
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int pos = p.first + w0 + r;  // past the last row: computed, never written
      const bool visible = key <= pos && key <= last_key && (p.window == 0 || pos - key < p.window);
      const float x = visible ? s[r] : -INFINITY;
      const float new_max = fmaxf(run_max[r], warp_max(x));
      float w = 0, a = 1;  // a row that has seen no key yet keeps its zeros
      if (new_max != -INFINITY) {
        w = expf(x - new_max);
        a = expf(run_max[r] - new_max);
      }
      run_sum[r] = run_sum[r] * a + warp_sum(w);
      run_max[r] = new_max;
#pragma unroll
      for (int c = 0; c < kDimsPerLane; ++c) o[r][c] *= a;
      s[r] = w;  // the score is now key `lane`'s weight
    }
    for (int j = 0; j < kKeys; ++j) {
      float w[kRowsPerWarp];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) w[r] = __shfl_sync(0xffffffffu, s[r], j);
#pragma unroll
      for (int c = 0; c < kDimsPerLane; ++c) {
        const int d = lane + 32 * c;
        if (d < hd) {
          const float v = sv[j * hd + d];
#pragma unroll
          for (int r = 0; r < kRowsPerWarp; ++r) o[r][c] += w[r] * v;
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = w0 + r;
    if (row >= p.rows) continue;
    T* dst = out + static_cast<std::size_t>(row) * q_stride + h * hd;
#pragma unroll
    for (int c = 0; c < kDimsPerLane; ++c) {
      const int d = lane + 32 * c;
      if (d < hd) dst[d] = from_f32<T>(o[r][c] / run_sum[r]);  // every row sees at least its own key
    }
  }
}

}  // namespace

void launch_prefill_attention(const void* q, const void* keys, const void* values, void* out, const PrefillLaunch& p,
                              Element element, cudaStream_t stream) {
  const std::size_t hd = p.head_dim;
  // Queries, keys (padded) and values as f32: 48.1 KiB at head_dim 128,
  // 96.1 KiB at 256, past the 48 KiB a launch gets without asking.
  const std::size_t shared = (kRows * hd + kKeys * (hd + 1) + kKeys * hd) * sizeof(float);
  const dim3 grid(static_cast<unsigned>((p.rows + kRows - 1) / kRows), static_cast<unsigned>(p.heads));
  with_element(element, [&](auto e) {
    using T = decltype(e);
    auto* kernel = &prefill_kernel<T>;
    if (shared > 48 * 1024) {
      cuda::check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)),
                  "cudaFuncSetAttribute", "give prefill attention its shared memory");
    }
    kernel<<<grid, kWarps * 32, shared, stream>>>(static_cast<const T*>(q), static_cast<const T*>(keys),
                                                  static_cast<const T*>(values), static_cast<T*>(out), p);
  });
  check_launch("prefill_kernel");
}

}  // namespace nuvec::lm::gpu
