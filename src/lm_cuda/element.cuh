// Device-side element types: f16 (__half) and bf16 (__nv_bfloat16), read as
// f32 and written back rounded to nearest even, and the host-side dispatch
// from the Element a launcher is given to the kernel template of that type.
// Included by the .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "lm_cuda/launch.h"

namespace nuvec::lm::gpu {

__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Calls f with a value of the type `element` names, so that f can launch its
// kernel for that type: with_element(element, [&](auto e) { kernel<decltype(e)><<<...>>>(...); }).
template <class F>
void with_element(Element element, F&& f) {
  if (element == Element::bf16) {
    f(__nv_bfloat16{});
  } else {
    f(__half{});
  }
}

}  // namespace nuvec::lm::gpu
