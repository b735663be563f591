# CUDA benchmarks (run on a GPU machine; see bench/cuda/run_h200.sh). The
# pair benchmark against PyTorch's allocator needs PyTorch's headers and is
# built where they are (build_pair_bench.sh).
if(NUVEC_CUDA)
  add_executable(nuvec_cuda_upload_bench ${CMAKE_CURRENT_LIST_DIR}/upload_bench.cc)
  target_link_libraries(nuvec_cuda_upload_bench PRIVATE nuvec nuvec_bench_support ${NUVEC_CUDART})
  add_executable(nuvec_cuda_granularity ${CMAKE_CURRENT_LIST_DIR}/granularity.cc)
  target_link_libraries(nuvec_cuda_granularity PRIVATE nuvec_bench_support ${NUVEC_CUDART})
  # Trace replay on the GPU: nuvec and cudaMallocAsync (PyTorch's side is
  # torch_replay.py). The replay engine is internal (src/trace).
  add_executable(nuvec_cuda_replay_bench ${CMAKE_CURRENT_LIST_DIR}/replay_bench.cc)
  target_link_libraries(nuvec_cuda_replay_bench PRIVATE nuvec nuvec_cuda_internals nuvec_bench_support ${NUVEC_CUDART})
  # What committing device memory costs (the arena's granules against cudaMalloc).
  add_executable(nuvec_cuda_commit_bench ${CMAKE_CURRENT_LIST_DIR}/commit_bench.cc)
  target_link_libraries(nuvec_cuda_commit_bench PRIVATE nuvec nuvec_cuda_internals nuvec_bench_support ${NUVEC_CUDART})
  foreach(t nuvec_cuda_upload_bench nuvec_cuda_granularity nuvec_cuda_replay_bench nuvec_cuda_commit_bench)
    target_compile_options(${t} PRIVATE -Wall -Wextra)
    set_target_properties(${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/cuda)
  endforeach()
endif()
# The LM runtime on the GPU, warm, as llama-bench measures (issue 27's side
# by side: bench/cuda/compare_gpu_h200.sh).
if(TARGET nuvec_lm_cuda)
  add_executable(nuvec_gpu_session_bench ${CMAKE_CURRENT_LIST_DIR}/gpu_session_bench.cc)
  target_link_libraries(nuvec_gpu_session_bench PRIVATE nuvec nuvec_lm_cuda nuvec_bench_support)
  target_compile_options(nuvec_gpu_session_bench PRIVATE -Wall -Wextra)
  set_target_properties(nuvec_gpu_session_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/cuda)
endif()
