// The bounds a model's configuration must stay within, whichever file it
// comes from (config.json: config.cc; GGUF metadata: gguf_model_config.cc;
// an MLX config's quantization entry: mlx_quantization.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace nuvec::lm::detail {

// Far above any real model, low enough that every product of them the
// runtime forms (vocab x hidden, layers x context x kv_dim) fits in 64 bits.
inline constexpr std::size_t kMaxVocab = std::size_t{1} << 24;
inline constexpr std::size_t kMaxHidden = std::size_t{1} << 17;
inline constexpr std::size_t kMaxLayers = 4096;
inline constexpr std::size_t kMaxHeads = 4096;
inline constexpr std::size_t kMaxContext = std::size_t{1} << 24;
// Real config.json files are a few KB.
inline constexpr std::uintmax_t kMaxConfigBytes = std::uintmax_t{16} << 20;

}  // namespace nuvec::lm::detail
