// Decode attention: one query row against the cache, in one kernel. Block
// (key/value head g, split s) takes the group of query heads that share g
// over one contiguous share of the visible positions, a tile of 128 keys at
// a time: thread t scores key t of the tile against every query of the group
// (the key row is read once, 16 bytes at a time, for all of them), a warp per
// query head folds the tile into that head's running maximum and sum, then
// each thread adds the tile's weighted values into the sums it owns. With
// one split the block writes the result; with several, each block leaves
// its partial result in the scratch and the last one to finish (a counter per
// head) combines them: flash-decoding, without a second launch.
#include "lm_cuda/element.cuh"
#include "lm_cuda/launch.h"
#include "lm_cuda/warp_reduce.cuh"

namespace nuvec::lm::gpu {
namespace {

constexpr int kThreads = kDecodeThreads;  // also the keys of a tile: one per thread
constexpr int kWarps = kThreads / 32;
constexpr int kGroup = kMaxGroup;
// The weighted sums one thread owns: the group's group * head_dim, dealt out
// round-robin (at most 16 * 256 / 128).
constexpr int kMaxAcc = kMaxGroup * kMaxHeadDim / kThreads;

template <class T>
__global__ void __launch_bounds__(kThreads)
    decode_kernel(const T* q, const T* keys, const T* values, T* out, DecodeLaunch p, float* partials,
                  unsigned* counters) {
  extern __shared__ float shared[];
  const int group = p.group, hd = p.head_dim, width = group * hd;
  float* sq = shared;                        // [group][hd]: the group's queries, scaled
  float* scores = sq + width;                // [group][kThreads]: the tile's scores, then weights
  float* run_max = scores + group * kThreads;  // [group]
  float* run_sum = run_max + group;          // [group]
  float* correction = run_sum + group;       // [group]: this tile's rescaling of the sums
  __shared__ bool last_block;

  const int g = blockIdx.x, split = blockIdx.y, t = threadIdx.x;
  // The visible keys lo .. position, split in contiguous shares, none
  // empty (an empty one would leave a maximum of -inf and a sum of 0, which
  // the combination weighs as 0, but costs a block for nothing).
  // The split is decode_splits' (attention.cc), worked out here from the
  // step's position, so that a graph's replay splits as a launch would.
  const int position = p.position_at != nullptr ? *p.position_at : p.position;
  const int lo = p.window != 0 && position + 1 > p.window ? position + 1 - p.window : 0;
  const int count = position + 1 - lo;
  const int bound = max(1, min(min(p.wanted_splits, (count + p.min_keys - 1) / p.min_keys), p.max_splits));
  const int per_split = (count + bound - 1) / bound;
  const int splits = (count + per_split - 1) / per_split;
  if (split >= splits) return;  // a block of the grid's spare ones (DecodeLaunch::grid_splits)
  const int begin = lo + split * per_split;
  const int end = min(lo + count, begin + per_split);
  const T* kh = keys + g * p.capacity * hd;
  const T* vh = values + g * p.capacity * hd;

  // Query heads g * group .. g * group + group - 1 are contiguous in q.
  for (int i = t; i < width; i += kThreads) sq[i] = to_f32(q[g * width + i]) * p.scale;
  if (t < group) {
    run_max[t] = -INFINITY;
    run_sum[t] = 0;
  }
  float acc[kMaxAcc];
#pragma unroll
  for (int a = 0; a < kMaxAcc; ++a) acc[a] = 0;
  __syncthreads();

  for (int t0 = begin; t0 < end; t0 += kThreads) {
    const int pos = t0 + t;
    float dot[kGroup];
#pragma unroll
    for (int j = 0; j < kGroup; ++j) dot[j] = 0;
    if (pos < end) {
      // head_dim is a multiple of 8 (check_attention): 16-byte rows of halves.
      const uint4* row = reinterpret_cast<const uint4*>(kh + static_cast<std::size_t>(pos) * hd);
      for (int d0 = 0; d0 < hd; d0 += 8) {
        const uint4 raw = row[d0 / 8];
        const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const float kd = to_f32(e[u]);
#pragma unroll
          for (int j = 0; j < kGroup; ++j) {
            if (j < group) dot[j] += sq[j * hd + d0 + u] * kd;
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      if (j < group) scores[j * kThreads + t] = pos < end ? dot[j] : -INFINITY;
    }
    __syncthreads();

    // The online softmax, a warp per query head. The tile's first key is
    // visible, so its maximum is finite.
    const int warp = t / 32, lane = t % 32;
    for (int j = warp; j < group; j += kWarps) {
      float* s = scores + j * kThreads;
      const float old_max = run_max[j];
      float tile_max = -INFINITY;
      for (int c = lane; c < kThreads; c += 32) tile_max = fmaxf(tile_max, s[c]);
      const float new_max = fmaxf(old_max, warp_max(tile_max));
      float sum = 0;
      for (int c = lane; c < kThreads; c += 32) {
        const float w = expf(s[c] - new_max);  // 0 for a key past the end
        s[c] = w;
        sum += w;
      }
      sum = warp_sum(sum);
      __syncwarp();
      if (lane == 0) {
        const float a = expf(old_max - new_max);  // 0 on the first tile
        correction[j] = a;
        run_sum[j] = run_sum[j] * a + sum;
        run_max[j] = new_max;
      }
    }
    __syncthreads();

    const int n = min(kThreads, end - t0);
#pragma unroll
    for (int a = 0; a < kMaxAcc; ++a) {
      const int i = t + a * kThreads;
      if (i < width) {
        const int j = i / hd, d = i % hd;
        const float* w = scores + j * kThreads;
        const T* v = vh + static_cast<std::size_t>(t0) * hd + d;
        float sum = acc[a] * correction[j];
#pragma unroll 8  // the loads issued ahead of the sums they feed (the order of the sums unchanged)
        for (int u = 0; u < n; ++u) sum += w[u] * to_f32(v[static_cast<std::size_t>(u) * hd]);
        acc[a] = sum;
      }
    }
    __syncthreads();  // the scores and corrections are overwritten next tile
  }

  if (splits == 1) {
#pragma unroll
    for (int a = 0; a < kMaxAcc; ++a) {
      const int i = t + a * kThreads;
      if (i < width) out[g * width + i] = from_f32<T>(acc[a] / run_sum[i / hd]);
    }
    return;
  }

  // This split's partial result: maxima, sums, then the weighted sums.
  const int stride = 2 * group + width;
  float* mine = partials + (static_cast<std::size_t>(g) * p.max_splits + split) * stride;
  if (t < group) {
    mine[t] = run_max[t];
    mine[group + t] = run_sum[t];
  }
#pragma unroll
  for (int a = 0; a < kMaxAcc; ++a) {
    const int i = t + a * kThreads;
    if (i < width) mine[2 * group + i] = acc[a];
  }
  // Written before the counter says so (CUDA's threadFenceReduction pattern).
  __threadfence();
  __syncthreads();
  if (t == 0) last_block = atomicAdd(&counters[g], 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!last_block) return;
  __threadfence();

  // The last block of head g: every split's result, rescaled to the largest
  // maximum. Read from L2 (__ldcg): the other blocks wrote them from other SMs.
  const float* all = partials + static_cast<std::size_t>(g) * p.max_splits * stride;
#pragma unroll
  for (int a = 0; a < kMaxAcc; ++a) {
    const int i = t + a * kThreads;
    if (i < width) {
      const int j = i / hd;
      float top = -INFINITY;
      for (int s = 0; s < splits; ++s) top = fmaxf(top, __ldcg(all + s * stride + j));
      float total = 0, weighted = 0;
      for (int s = 0; s < splits; ++s) {
        const float w = expf(__ldcg(all + s * stride + j) - top);
        total += __ldcg(all + s * stride + group + j) * w;
        weighted += __ldcg(all + s * stride + 2 * group + i) * w;
      }
      out[g * width + i] = from_f32<T>(weighted / total);
    }
  }
  if (t == 0) counters[g] = 0;  // ready for the next step, in stream order
}

}  // namespace

void launch_decode_attention(const void* q, const void* keys, const void* values, void* out, const DecodeLaunch& p,
                             float* partials, unsigned* counters, Element element, cudaStream_t stream) {
  const std::size_t group = p.group;
  const std::size_t shared = (group * p.head_dim + group * kThreads + 3 * group) * sizeof(float);
  const dim3 grid(static_cast<unsigned>(p.kv_heads), static_cast<unsigned>(p.grid_splits));
  with_element(element, [&](auto e) {
    using T = decltype(e);
    decode_kernel<T><<<grid, kThreads, shared, stream>>>(static_cast<const T*>(q), static_cast<const T*>(keys),
                                                         static_cast<const T*>(values), static_cast<T*>(out), p,
                                                         partials, counters);
  });
  check_launch("decode_kernel");
}

}  // namespace nuvec::lm::gpu
