// The GPU path as the commands reach it: a loaded model's weights uploaded
// to a CUDA device, and sessions over them. Declared in every build; where
// nuvec was built without its CUDA LM runtime, gpu_path_available says so
// and the rest raise the same sentence (gpu_generation.cc).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "generation.h"

namespace nuvec::tool {

// Whether `--device cuda:ordinal` can run here; else `why` says why.
bool gpu_path_available(int ordinal, std::string* why);

class GpuModel {
 public:
  // Uploads every tensor of `model` to `gpu` (tagged "weights"); the CPU
  // model may go afterwards. InvalidArgument for quantized weights.
  GpuModel(Device& gpu, const lm::Model& model);
  ~GpuModel();
  GpuModel(const GpuModel&) = delete;
  GpuModel& operator=(const GpuModel&) = delete;

  // Device bytes of the weights.
  std::size_t weight_bytes() const;
  // "bf16" or "f16".
  std::string dtype_name() const;
  // A session of `context` positions (KV cache in the weights' dtype).
  std::unique_ptr<Generation> session(std::size_t context, std::size_t prefill_chunk) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nuvec::tool
