#include "lm/kv_cache.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "lm/half_convert.h"
#include "nuvec/error.h"

namespace nuvec::lm {

std::string_view kv_cache_precision_name(KVCachePrecision precision) {
  return precision == KVCachePrecision::f16 ? "f16" : "f32";
}

std::size_t kv_cache_element_bytes(KVCachePrecision precision) {
  return precision == KVCachePrecision::f16 ? 2 : 4;
}

KVCache::KVCache(Device& device, const ModelConfig& c, std::size_t context, std::size_t tile,
                 KVCachePrecision precision)
    : precision_(precision), layers_(c.num_hidden_layers), kv_heads_(c.num_key_value_heads), head_dim_(c.head_dim),
      context_(context) {
  if (context == 0 || tile == 0) throw InvalidArgument("a KV cache needs a context of at least one position");
  key_stride_ = (context + tile - 1) / tile * tile;
  const DType dtype = is_f16() ? DType::f16 : DType::f32;
  // Shape::elements() checks for overflow.
  keys_ = Tensor::empty(device, dtype, Shape{layers_ * kv_heads_, head_dim_, key_stride_});
  values_ = Tensor::empty(device, dtype, Shape{layers_ * kv_heads_, context_, head_dim_});
}

float* KVCache::f32_elements(const Tensor& t) const {
  if (is_f16()) throw InvalidArgument("this KV cache holds f16 elements: read them with keys_f16/values_f16");
  return t.mutable_f32();
}

std::uint16_t* KVCache::f16_elements(const Tensor& t) const {
  if (!is_f16()) throw InvalidArgument("this KV cache holds f32 elements: read them with keys/values");
  return reinterpret_cast<std::uint16_t*>(t.mutable_data());
}

std::size_t KVCache::bytes_per_position() const {
  return 2 * layers_ * kv_heads_ * head_dim_ * kv_cache_element_bytes(precision_);
}

void KVCache::store(std::size_t layer, std::size_t first, std::size_t rows, const float* k, const float* v) const {
  const std::size_t width = kv_heads_ * head_dim_;
  if (!is_f16()) {
    for (std::size_t h = 0; h < kv_heads_; ++h) {
      float* kt = keys(layer, h);
      float* vs = values(layer, h);
      for (std::size_t r = 0; r < rows; ++r) {
        const float* kr = k + r * width + h * head_dim_;
        for (std::size_t d = 0; d < head_dim_; ++d) kt[d * key_stride_ + first + r] = kr[d];
        std::memcpy(vs + (first + r) * head_dim_, v + r * width + h * head_dim_, head_dim_ * sizeof(float));
      }
    }
    return;
  }
  // Values are contiguous: converted straight into place. Keys go through a
  // small block on the stack (converted together, then spread over the
  // transposed rows), so that decoding never allocates.
  constexpr std::size_t kBlock = 64;
  std::uint16_t block[kBlock];
  for (std::size_t h = 0; h < kv_heads_; ++h) {
    std::uint16_t* kt = keys_f16(layer, h);
    std::uint16_t* vs = values_f16(layer, h);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* kr = k + r * width + h * head_dim_;
      for (std::size_t d0 = 0; d0 < head_dim_; d0 += kBlock) {
        const std::size_t n = std::min(kBlock, head_dim_ - d0);
        half::from_f32(kr + d0, block, n);
        for (std::size_t d = 0; d < n; ++d) kt[(d0 + d) * key_stride_ + first + r] = block[d];
      }
      half::from_f32(v + r * width + h * head_dim_, vs + (first + r) * head_dim_, head_dim_);
    }
  }
}

}  // namespace nuvec::lm
