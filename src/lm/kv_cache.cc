#include "lm/kv_cache.h"

#include <cstring>

#include <fmt/format.h>

#include "nuvec/error.h"

namespace nuvec::lm {

KVCache::KVCache(Device& device, const ModelConfig& c, std::size_t context, std::size_t tile)
    : layers_(c.num_hidden_layers), kv_heads_(c.num_key_value_heads), head_dim_(c.head_dim), context_(context) {
  if (context == 0 || tile == 0) throw InvalidArgument("a KV cache needs a context of at least one position");
  key_stride_ = (context + tile - 1) / tile * tile;
  // Shape::elements() checks for overflow.
  keys_ = Tensor::empty(device, DType::f32, Shape{layers_ * kv_heads_, head_dim_, key_stride_});
  values_ = Tensor::empty(device, DType::f32, Shape{layers_ * kv_heads_, context_, head_dim_});
}

std::size_t KVCache::bytes_per_position() const { return 2 * layers_ * kv_heads_ * head_dim_ * sizeof(float); }

void KVCache::store(std::size_t layer, std::size_t first, std::size_t rows, const float* k, const float* v) const {
  const std::size_t width = kv_heads_ * head_dim_;
  for (std::size_t h = 0; h < kv_heads_; ++h) {
    float* kt = keys(layer, h);
    float* vs = values(layer, h);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* kr = k + r * width + h * head_dim_;
      for (std::size_t d = 0; d < head_dim_; ++d) kt[d * key_stride_ + first + r] = kr[d];
      std::memcpy(vs + (first + r) * head_dim_, v + r * width + h * head_dim_, head_dim_ * sizeof(float));
    }
  }
}

}  // namespace nuvec::lm
