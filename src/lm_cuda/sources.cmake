# The LM runtime on the GPU (docs/lm.md, "On a GPU"): its kernels (RMSNorm,
# RoPE, SwiGLU, the KV cache's store, decode and prefill attention, the
# embedding gather, the residual add fused into RMSNorm, greedy argmax:
# src/lm_cuda/*.cu, compiled by nvcc), the products through cuBLASLt, and
# the session over them (gpu_weights.cc, gpu_session.cc:
# nuvec/lm/gpu_session.h). Included from the top
# CMakeLists.txt only where the CUDA backend and the LM runtime are both
# built: every function here takes device pointers and a cudaStream_t, so a
# build without the toolkit has nothing to offer in their place.

# One architecture: the H200 (sm_90) is the GPU nuvec is measured on, and
# CI (2 cores) compiles these files once per architecture named. "90" is
# sm_90 machine code plus compute_90 PTX, which the driver compiles for a
# newer GPU at load. -DCMAKE_CUDA_ARCHITECTURES=... builds for others.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "GPU architectures of the LM kernels")
endif()
enable_language(CUDA)

target_sources(nuvec_lm_cuda PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/check.cc
  ${CMAKE_CURRENT_LIST_DIR}/ops.cc
  ${CMAKE_CURRENT_LIST_DIR}/rms_norm.cu
  ${CMAKE_CURRENT_LIST_DIR}/rope.cu
  ${CMAKE_CURRENT_LIST_DIR}/swiglu.cu
  ${CMAKE_CURRENT_LIST_DIR}/kv_layout.cc
  ${CMAKE_CURRENT_LIST_DIR}/kv_store.cu
  ${CMAKE_CURRENT_LIST_DIR}/attention.cc
  ${CMAKE_CURRENT_LIST_DIR}/decode_attention.cu
  ${CMAKE_CURRENT_LIST_DIR}/prefill_attention.cu
  ${CMAKE_CURRENT_LIST_DIR}/linear.cc
  ${CMAKE_CURRENT_LIST_DIR}/decode_product.cc
  ${CMAKE_CURRENT_LIST_DIR}/decode_product.cu
  ${CMAKE_CURRENT_LIST_DIR}/embedding.cu
  ${CMAKE_CURRENT_LIST_DIR}/residual_rms_norm.cu
  ${CMAKE_CURRENT_LIST_DIR}/argmax.cu
  ${CMAKE_CURRENT_LIST_DIR}/gpu_weights.cc
  ${CMAKE_CURRENT_LIST_DIR}/step_graph.cc
  ${CMAKE_CURRENT_LIST_DIR}/gpu_session.cc
)
# The shared cuBLASLt: its static archive is most of a gigabyte of kernels.
target_link_libraries(nuvec_lm_cuda PUBLIC ${NUVEC_CUDART} CUDA::cublasLt)
# The layer's target was made before CUDA was enabled, so it did not take
# the architectures from the variable.
set_target_properties(nuvec_lm_cuda PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
                                               CUDA_STANDARD 17 CUDA_EXTENSIONS OFF)
# nuvec_layer() gives every layer -Wall -Wextra -Wpedantic, which nvcc does not
# take: the host compiler gets them through -Xcompiler for the .cu files
# (without -Wpedantic, which nvcc's generated host code fails). The .cu files
# are C++17 (CMake 3.25 has no C++20 flag for nvcc): they include only
# launch.h and the kernels' own headers, none of nuvec's C++20 ones.
set_property(TARGET nuvec_lm_cuda PROPERTY COMPILE_OPTIONS
  "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wpedantic>"
  "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>")
