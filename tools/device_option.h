// --device cpu|cuda|cuda:N, which `nuvec run` and `nuvec profile` take: where
// the model runs. cpu (the default) is the CPU Session over the mapped
// checkpoint; cuda:N uploads the weights to GPU N and runs the GPU session
// (nuvec/lm/gpu_session.h); cuda is cuda:0.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "model_flags.h"

namespace nuvec {
class Device;
}

namespace nuvec::tool {

struct DeviceSpec {
  bool cuda = false;
  int ordinal = 0;  // the GPU, with cuda

  std::string name() const;  // "cpu", "cuda:0"
};

// InvalidArgument, saying what it takes, for anything but cpu, cuda or
// cuda:N with N a whole number below 4096 (digits only: no sign, no space).
DeviceSpec parse_device(std::string_view text);

// Adds --device to `app`, checked by parse_device when parsed (a usage error).
void add_device_option(CLI::App& app, std::string& value);

// The device the model runs on. For cuda:N, InvalidArgument in one line,
// before anything is loaded, when this program cannot run there: built
// without CUDA support, no GPU or driver, no such GPU, one too old for the
// kernels.
Device& open_device(const DeviceSpec& spec);
// open_device's check alone, making no device (and so no CUDA context: a
// parent process that only starts the phases holds no GPU memory).
void require_usable(const DeviceSpec& spec);

// The CPU path's flags, refused (InvalidArgument) with a GPU rather than
// ignored: --mlock (a GPU's weights are device memory, not pages to lock),
// --kv-cache (the GPU's KV cache holds the checkpoint's bf16/f16) and --exact
// (the GPU's products take bf16/f16 activations, sums in f32).
void refuse_cpu_only_flags(const ModelFlags& flags, bool exact, const DeviceSpec& spec);

}  // namespace nuvec::tool
