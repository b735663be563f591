// The attention kernels' host side: the checks both entry points share,
// decode's scratch and its split of the positions.
#include "lm_cuda/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "cuda/cuda_error.h"
#include "lm_cuda/check.h"
#include "nuvec/error.h"
#include "nuvec/trace_tag.h"

namespace nuvec::lm::gpu {
namespace {

// A decode split of fewer keys would spend more on its partial result than
// on its keys. Half a tile: a 512-key context is 8 blocks per key/value head
// rather than 2 (with 256: 4 heads took 8 of the H200's 132 multiprocessors,
// and the step's attention ran at a small fraction of the memory's speed).
constexpr std::size_t kMinKeysPerSplit = 64;

// InvalidArgument unless `shape` is one the kernels take and matches
// `cache`; the kernels' Element.
Element check_attention(const KVLayer& cache, const AttentionShape& shape, std::size_t last_position, const char* what) {
  const Element element = element_of(cache.dtype, what);
  if (shape.kv_heads == 0 || shape.heads % shape.kv_heads != 0) {
    throw InvalidArgument(
        fmt::format("{}: {} query heads do not share {} key/value heads evenly", what, shape.heads, shape.kv_heads));
  }
  if (shape.head_dim == 0 || shape.head_dim % 8 != 0) {
    throw InvalidArgument(fmt::format("{}: head_dim {} is not a positive multiple of 8", what, shape.head_dim));
  }
  require_at_most(shape.head_dim, kMaxHeadDim, "head_dim", what);
  require_at_most(shape.heads / shape.kv_heads, kMaxGroup, "query heads per key/value head", what);
  require_at_most(shape.heads, 65535, "heads", what);  // a grid dimension
  if (cache.kv_heads != shape.kv_heads || cache.head_dim != shape.head_dim) {
    throw InvalidArgument(fmt::format("{}: the cache holds {} heads of {}, the attention asks for {} of {}", what,
                                      cache.kv_heads, cache.head_dim, shape.kv_heads, shape.head_dim));
  }
  if (last_position >= cache.capacity) {
    throw InvalidArgument(
        fmt::format("{}: position {} is past the cache's {} positions", what, last_position, cache.capacity));
  }
  require_at_most(last_position, std::numeric_limits<int>::max() - 1, "the last position", what);
  require_at_most(shape.window, std::numeric_limits<int>::max(), "window", what);
  return element;
}

int multiprocessors() {
  int device = 0, count = 0;
  cuda::check(cudaGetDevice(&device), "cudaGetDevice", "find the GPU for decode attention");
  cuda::check(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute",
              "count the GPU's multiprocessors");
  return count;
}

// Blocks per key/value head that fill the GPU: two per multiprocessor.
// (Four, at most 128 a head, made an 8192-key step slower on the H200,
// 350.6 -> 305.5 tokens/s: the last block's combine reads every split.)
std::size_t wanted_splits(const AttentionShape& shape) {
  const auto sms = static_cast<std::size_t>(multiprocessors());  // the runtime keeps them: no driver call
  return (2 * sms + shape.kv_heads - 1) / std::max<std::size_t>(shape.kv_heads, 1);
}

// The splits before none is made empty: the kernel's own rule (decode_kernel), from the visible keys.
std::size_t split_bound(std::size_t position, const AttentionShape& shape) {
  const std::size_t lo = shape.window != 0 && position + 1 > shape.window ? position + 1 - shape.window : 0;
  const std::size_t count = position + 1 - lo;
  return std::clamp<std::size_t>(std::min(wanted_splits(shape), (count + kMinKeysPerSplit - 1) / kMinKeysPerSplit),
                                 1, DecodeScratch::kMaxSplits);
}

float inverse_sqrt(std::size_t head_dim) { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }

}  // namespace

std::size_t DecodeScratch::bytes_for(const AttentionShape& s) {
  const std::size_t group = s.heads / s.kv_heads;
  // Per split of each head: the group's running maximum and sum, then its
  // weighted sums; after them, one counter per head.
  return s.kv_heads * kMaxSplits * (2 * group + group * s.head_dim) * sizeof(float) + s.kv_heads * sizeof(unsigned);
}

DecodeScratch::DecodeScratch(Device& device, const AttentionShape& shape, cudaStream_t stream) : shape_(shape) {
  if (shape.kv_heads == 0 || shape.heads % shape.kv_heads != 0) {
    throw InvalidArgument(fmt::format("DecodeScratch: {} query heads do not share {} key/value heads evenly",
                                      shape.heads, shape.kv_heads));
  }
  const std::size_t group = shape.heads / shape.kv_heads;
  counters_offset_ = shape.kv_heads * kMaxSplits * (2 * group + group * shape.head_dim) * sizeof(float);
  {
    const Tag tag(device, "scratch");
    buffer_ = device.new_buffer(bytes_for(shape), reinterpret_cast<std::uintptr_t>(stream));
  }
  cuda::check(cudaMemsetAsync(counters(), 0, shape.kv_heads * sizeof(unsigned), stream), "cudaMemsetAsync",
              "clear decode attention's counters");
}

std::size_t decode_splits(std::size_t position, const AttentionShape& shape) {
  const std::size_t lo = shape.window != 0 && position + 1 > shape.window ? position + 1 - shape.window : 0;
  const std::size_t count = position + 1 - lo;
  const std::size_t bound = split_bound(position, shape);
  const std::size_t per_split = (count + bound - 1) / bound;
  return (count + per_split - 1) / per_split;  // none empty (the kernel's shares: ceil(count / splits) each)
}

void decode_attention(const void* q, std::size_t position, const KVLayer& cache, const AttentionShape& shape,
                      void* out, const DecodeScratch& scratch, cudaStream_t stream, const std::int32_t* position_at) {
  const char* what = "gpu::decode_attention";
  const Element element = check_attention(cache, shape, position, what);
  const AttentionShape& made = scratch.shape();
  if (made.heads != shape.heads || made.kv_heads != shape.kv_heads || made.head_dim != shape.head_dim) {
    throw InvalidArgument(fmt::format("{}: the scratch was made for {}/{} heads of {}, not {}/{} of {}", what,
                                      made.heads, made.kv_heads, made.head_dim, shape.heads, shape.kv_heads,
                                      shape.head_dim));
  }
  DecodeLaunch p{};
  p.kv_heads = static_cast<int>(shape.kv_heads);
  p.group = static_cast<int>(shape.heads / shape.kv_heads);
  p.head_dim = static_cast<int>(shape.head_dim);
  p.capacity = cache.capacity;
  p.position = static_cast<int>(position);
  p.position_at = position_at;
  p.window = static_cast<int>(shape.window);
  // The grid: the step's own splits, or with position_at, enough for any
  // position the cache holds (split_bound grows with the position and is at
  // least decode_splits), so that one graph serves them all; the kernel
  // works out the step's splits itself and the blocks past them return.
  p.grid_splits = static_cast<int>(position_at != nullptr ? split_bound(cache.capacity - 1, shape)
                                                          : decode_splits(position, shape));
  p.wanted_splits = static_cast<int>(wanted_splits(shape));
  p.min_keys = static_cast<int>(kMinKeysPerSplit);
  p.max_splits = static_cast<int>(DecodeScratch::kMaxSplits);
  p.scale = inverse_sqrt(shape.head_dim);
  launch_decode_attention(q, cache.keys, cache.values, out, p, scratch.partials(), scratch.counters(), element,
                          stream);
}

void prefill_attention(const void* q, std::size_t rows, std::size_t first, const KVLayer& cache,
                       const AttentionShape& shape, void* out, cudaStream_t stream) {
  if (rows == 0) return;
  const char* what = "gpu::prefill_attention";
  const Element element = check_attention(cache, shape, first + rows - 1, what);
  PrefillLaunch p{};
  p.rows = static_cast<int>(rows);
  p.first = static_cast<int>(first);
  p.heads = static_cast<int>(shape.heads);
  p.group = static_cast<int>(shape.heads / shape.kv_heads);
  p.head_dim = static_cast<int>(shape.head_dim);
  p.capacity = cache.capacity;
  p.window = static_cast<int>(shape.window);
  p.scale = inverse_sqrt(shape.head_dim);
  launch_prefill_attention(q, cache.keys, cache.values, out, p, element, stream);
}

}  // namespace nuvec::lm::gpu
