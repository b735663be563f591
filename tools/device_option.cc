#include "device_option.h"

#include <charconv>

#include <fmt/format.h>

#include "gpu_generation.h"
#include "nuvec/device.h"
#include "nuvec/error.h"

namespace nuvec::tool {
namespace {

constexpr int kMaxOrdinal = 4095;

}  // namespace

std::string DeviceSpec::name() const { return cuda ? fmt::format("cuda:{}", ordinal) : "cpu"; }

DeviceSpec parse_device(std::string_view text) {
  if (text == "cpu") return {};
  if (text == "cuda") return {true, 0};
  constexpr std::string_view prefix = "cuda:";
  if (text.starts_with(prefix)) {
    const std::string_view digits = text.substr(prefix.size());
    int ordinal = -1;
    const bool all_digits = !digits.empty() && digits.size() <= 4 &&
                            digits.find_first_not_of("0123456789") == std::string_view::npos;
    if (all_digits) std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
    if (all_digits && ordinal >= 0 && ordinal <= kMaxOrdinal) return {true, ordinal};
  }
  // Printable in a message whatever it holds (it came from the command line).
  std::string shown;
  for (const char ch : text.substr(0, 64)) shown += ch >= 0x20 && ch < 0x7f ? ch : '?';
  if (text.size() > 64) shown += "...";
  throw InvalidArgument(
      fmt::format("--device takes cpu, cuda or cuda:N (N the GPU's index, 0 to {}), not '{}'", kMaxOrdinal, shown));
}

void add_device_option(CLI::App& app, std::string& value) {
  app.add_option("--device", value, "where the model runs: cpu, cuda or cuda:N (GPU N; cuda is cuda:0)")
      ->default_val(value)
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            try {
              parse_device(v);
              return {};
            } catch (const InvalidArgument& e) {
              // CLI11 names the option itself: "--device: takes cpu, ...".
              const std::string_view what = e.what();
              return std::string(what.starts_with("--device ") ? what.substr(9) : what);
            }
          },
          "cpu|cuda|cuda:N", "device"));
}

void require_usable(const DeviceSpec& spec) {
  if (!spec.cuda) return;
  std::string why;
  if (!gpu_path_available(spec.ordinal, &why)) {
    throw InvalidArgument(fmt::format("--device {}: {}; run on the CPU with --device cpu", spec.name(), why));
  }
}

Device& open_device(const DeviceSpec& spec) {
  if (!spec.cuda) return Device::cpu();
  require_usable(spec);
  return Device::cuda(spec.ordinal);
}

void refuse_cpu_only_flags(const ModelFlags& flags, bool exact, const DeviceSpec& spec) {
  const auto refuse = [&](const char* flag, const char* why) {
    throw InvalidArgument(fmt::format("{} is for --device cpu: on --device {} {}", flag, spec.name(), why));
  };
  if (flags.mlock) refuse("--mlock", "the weights are GPU memory, which is never swapped out");
  if (!flags.kv_cache.empty()) refuse("--kv-cache", "the KV cache holds the checkpoint's bf16/f16");
  if (exact) refuse("--exact", "the products take bf16/f16 activations (their sums are f32)");
}

}  // namespace nuvec::tool
