#include "lm/mlx_quantization.h"

#include "lm/config_limits.h"

#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nuvec/input_file.h"
#include "nuvec/error.h"

namespace nuvec::lm::detail {
namespace {


MlxQuantParams params(const nlohmann::json& j, const std::filesystem::path& path, const std::string& where) {
  const auto positive = [&](const char* key) -> std::uint64_t {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() == 0 ||
        it->get<std::uint64_t>() > 1024) {
      io::format_error(path, 0, fmt::format("{}.{} must be a positive integer (mlx-lm writes bits and group_size)",
                                            where, key));
    }
    return it->get<std::uint64_t>();
  };
  return {static_cast<int>(positive("bits")), static_cast<std::size_t>(positive("group_size"))};
}

}  // namespace

std::optional<MlxQuantParams> MlxQuantization::of(const std::string& module) const {
  const auto it = modules.find(module);
  return it == modules.end() ? std::optional<MlxQuantParams>(global) : it->second;
}

std::optional<MlxQuantization> read_mlx_quantization(const std::filesystem::path& path) {
  const io::InputFile file(path);
  if (file.size() > kMaxConfigBytes) io::format_error(path, 0, "too large for a config.json");
  std::string text(static_cast<std::size_t>(file.size()), '\0');
  file.read_exact(0, std::as_writable_bytes(std::span(text.data(), text.size())), "config.json");
  const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) io::format_error(path, 0, "config.json is not a JSON object");
  const auto it = root.find("quantization");
  if (it == root.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) io::format_error(path, 0, "quantization must be an object (bits, group_size, per module)");
  MlxQuantization q;
  q.global = params(*it, path, "quantization");
  for (const auto& [key, value] : it->items()) {
    if (key == "bits" || key == "group_size" || key == "mode") continue;
    if (value.is_boolean() && !value.get<bool>()) {
      q.modules[key] = std::nullopt;
    } else if (value.is_object()) {
      q.modules[key] = params(value, path, "quantization." + key);
    }
  }
  if (const auto mode = it->find("mode"); mode != it->end() && !(mode->is_string() && *mode == "affine")) {
    io::format_error(path, 0, fmt::format("quantization mode {} is not MLX's affine mode, the one nuvec computes with",
                                          mode->dump()));
  }
  return q;
}

}  // namespace nuvec::lm::detail
