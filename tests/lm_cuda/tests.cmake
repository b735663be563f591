# The LM runtime's GPU kernels (src/lm_cuda) against the CPU path's own
# functions (src/lm: ops, rope, attention). One program,
# tests/lm_cuda/nuvec_lm_cuda_tests, which bench/cuda/prepare_lm_cuda_carry.sh
# carries to the GPU machine by that name; without a GPU its kernel tests
# skip and its refusal tests (checked before any launch) run.
if(NUVEC_CUDA AND TARGET nuvec_lm_cuda)
  foreach(name lm_cuda_ops_test lm_cuda_attention_test)
    nuvec_test(${name} DIR lm_cuda TIMEOUT 300 LIBRARIES nuvec_lm_cuda_internals nuvec_lm_internals ${NUVEC_CUDART})
  endforeach()
endif()
