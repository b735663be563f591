// The `quantization` entry of an mlx-lm config.json: how the checkpoint's
// weights were quantized (mlx.nn.quantize), globally and, where mlx-lm
// wrote one, per module ("model.layers.0.mlp.down_proj": {"bits": 8, ...},
// or false for a module left unquantized).
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace nuvec::lm::detail {

struct MlxQuantParams {
  int bits = 0;
  std::size_t group_size = 0;
};

struct MlxQuantization {
  MlxQuantParams global;
  std::map<std::string, std::optional<MlxQuantParams>> modules;  // nullopt: not quantized

  // The parameters of `module` (its weight's name less ".weight"); nullopt
  // where the config says it is not quantized.
  std::optional<MlxQuantParams> of(const std::string& module) const;
};

// Empty where config.json has no `quantization` entry; FormatError (naming
// the file) for one that is not an object of positive integers.
std::optional<MlxQuantization> read_mlx_quantization(const std::filesystem::path& config_json);

}  // namespace nuvec::lm::detail
