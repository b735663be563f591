// Reading a weight as the checkpoint stores it (f32, f16 or bf16) as f32,
// and the host-side dispatch from Stored to the type. Included by the .cu
// files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "lm_cuda/element.cuh"
#include "lm_cuda/launch.h"

namespace nuvec::lm::gpu {

__device__ __forceinline__ float stored_f32(float x) { return x; }
__device__ __forceinline__ float stored_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float stored_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class F>
void with_stored(Stored stored, F&& f) {
  switch (stored) {
    case Stored::f32: f(float{}); break;
    case Stored::f16: f(__half{}); break;
    case Stored::bf16: f(__nv_bfloat16{}); break;
  }
}

}  // namespace nuvec::lm::gpu
