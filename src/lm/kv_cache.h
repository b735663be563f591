// The key/value cache: every layer's keys and values for every position of
// the session's context, allocated once, up front, from the device (so the
// statistics see it and decoding never allocates).
//
// Layout, chosen for the attention loops: keys are stored transposed per
// head, [layer][kv_head][head_dim][key_stride], so that scoring a tile of
// keys runs along contiguous positions (key_stride is the context rounded up
// to whole tiles of keys, so a tile never reads past its row); values are
// [layer][kv_head][context][head_dim], so that accumulating a weighted sum
// runs along contiguous dimensions.
//
// Elements are f32 or f16 (KVCachePrecision): f16 is stored as its bits
// (uint16), rounded to nearest even on store; attention widens them to f32
// as it reads (attention_tile.inc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nuvec/device.h"
#include "nuvec/lm/config.h"
#include "nuvec/lm/session.h"
#include "nuvec/lm/tensor.h"

namespace nuvec::lm {

class KVCache {
 public:
  KVCache() = default;
  // OutOfMemory past the device's limit; InvalidArgument for a context of 0.
  KVCache(Device& device, const ModelConfig& config, std::size_t context, std::size_t tile = 64,
          KVCachePrecision precision = KVCachePrecision::f32);

  KVCachePrecision precision() const { return precision_; }
  bool is_f16() const { return precision_ == KVCachePrecision::f16; }

  std::size_t context() const { return context_; }
  // Elements between one key dimension's row and the next: a multiple of
  // `tile` (the attention's keys per tile) at least context().
  std::size_t key_stride() const { return key_stride_; }
  std::size_t head_dim() const { return head_dim_; }
  std::size_t bytes() const { return keys_.bytes() + values_.bytes(); }
  // Bytes one position takes over all layers (keys and values; the padding
  // of key rows to whole tiles not counted).
  std::size_t bytes_per_position() const;

  // Key dimension d of head h at position p is keys(layer, h)[d * key_stride() + p].
  // f32 caches only (InvalidArgument otherwise); keys_f16 for f16 ones.
  float* keys(std::size_t layer, std::size_t kv_head) const {
    return f32_elements(keys_) + key_offset(layer, kv_head);
  }
  // Value dimension d of head h at position p is values(layer, h)[p * head_dim() + d].
  float* values(std::size_t layer, std::size_t kv_head) const {
    return f32_elements(values_) + value_offset(layer, kv_head);
  }
  // The same for f16 caches: the bits of each f16 element.
  std::uint16_t* keys_f16(std::size_t layer, std::size_t kv_head) const {
    return f16_elements(keys_) + key_offset(layer, kv_head);
  }
  std::uint16_t* values_f16(std::size_t layer, std::size_t kv_head) const {
    return f16_elements(values_) + value_offset(layer, kv_head);
  }

  // Stores `rows` positions from `first`: k and v are [rows][kv_heads * head_dim].
  void store(std::size_t layer, std::size_t first, std::size_t rows, const float* k, const float* v) const;

 private:
  std::size_t key_offset(std::size_t layer, std::size_t kv_head) const {
    return (layer * kv_heads_ + kv_head) * head_dim_ * key_stride_;
  }
  std::size_t value_offset(std::size_t layer, std::size_t kv_head) const {
    return (layer * kv_heads_ + kv_head) * head_dim_ * context_;
  }
  float* f32_elements(const Tensor& t) const;
  std::uint16_t* f16_elements(const Tensor& t) const;

  Tensor keys_, values_;
  KVCachePrecision precision_ = KVCachePrecision::f32;
  std::size_t layers_ = 0, kv_heads_ = 0, head_dim_ = 0, context_ = 0, key_stride_ = 0;
};

}  // namespace nuvec::lm
