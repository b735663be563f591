// What gpu::Weights holds (nuvec/lm/gpu_session.h): each tensor's device
// address by role, as the session reads them, and the uploaded checkpoint
// that owns the buffers.
#pragma once

#include <vector>

#include "lm_cuda/launch.h"
#include "nuvec/cuda_upload.h"
#include "nuvec/lm/gpu_session.h"
#include "nuvec/lm/tensor.h"

namespace nuvec::lm::gpu {

// A norm weight or the embedding table: read element by element as stored.
struct StoredTensor {
  const void* data = nullptr;
  Stored stored = Stored::f32;
};

struct GpuLayer {
  StoredTensor input_norm, post_attention_norm;
  // Linear weights [out][in] of the activation dtype; biases of it too, or null.
  const void* q_proj = nullptr;
  const void* k_proj = nullptr;
  const void* v_proj = nullptr;
  const void* o_proj = nullptr;
  const void* gate_proj = nullptr;
  const void* up_proj = nullptr;
  const void* down_proj = nullptr;
  const void* q_bias = nullptr;
  const void* k_bias = nullptr;
  const void* v_bias = nullptr;
  const void* o_bias = nullptr;
  const void* gate_bias = nullptr;
  const void* up_bias = nullptr;
  const void* down_bias = nullptr;
};

struct Weights::State {
  Device* device = nullptr;
  ModelConfig config;
  DType dtype = DType::bf16;  // the linear weights', so the activations' and the KV cache's
  StoredTensor embed_tokens;
  std::vector<GpuLayer> layers;
  StoredTensor final_norm;
  const void* lm_head = nullptr;
  cuda::DeviceCheckpoint checkpoint;  // owns every buffer above
  std::size_t bytes = 0;
  double seconds = 0;
};

}  // namespace nuvec::lm::gpu
