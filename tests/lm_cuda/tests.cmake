# The LM runtime's GPU kernels (src/lm_cuda) against the CPU path's own
# functions (src/lm: ops, rope, attention), and the GPU session against the
# CPU Session. One program, tests/lm_cuda/nuvec_lm_cuda_tests, which
# bench/cuda/prepare_lm_cuda_carry.sh carries to the GPU machine by that
# name; without a GPU its kernel and session tests skip and its refusal
# tests (checked before any launch) run. The session test reads a quantized
# GGUF fixture of tests/lm/gguf (NUVEC_GGUF_FIXTURES overrides the path, for
# a copy of the tree elsewhere).
if(NUVEC_CUDA AND TARGET nuvec_lm_cuda)
  foreach(name lm_cuda_ops_test lm_cuda_attention_test lm_cuda_session_test lm_cuda_decode_product_test)
    nuvec_test(${name} DIR lm_cuda TIMEOUT 300 LIBRARIES nuvec_lm_cuda_internals nuvec_lm_internals ${NUVEC_CUDART}
               DEFINITIONS NUVEC_LM_CUDA_GGUF_FIXTURES="${PROJECT_SOURCE_DIR}/tests/lm/gguf/fixtures")
  endforeach()
endif()
# --device on the command line, in every build (a GPU or none, CUDA built in
# or not): bad values are usage errors, and a GPU that cannot be used is one
# clear line before anything is loaded.
if(TARGET nuvec_tool)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    add_test(NAME LmCudaDeviceFlag
             COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/device_flag_test.py $<TARGET_FILE:nuvec_tool>)
    set_tests_properties(LmCudaDeviceFlag PROPERTIES TIMEOUT 120)
  endif()
endif()
