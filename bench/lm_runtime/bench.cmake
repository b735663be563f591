# The LM runtime against the machine's bounds (issue 5): decode vs bandwidth,
# prefill vs the GEMM rate. bench/lm_runtime/run_lm_runtime_bench.sh records it.
add_executable(nuvec_lm_runtime_bench ${CMAKE_CURRENT_LIST_DIR}/lm_runtime_bench.cc)
target_link_libraries(nuvec_lm_runtime_bench PRIVATE nuvec nuvec_lm_internals nuvec_bench_support)
target_compile_options(nuvec_lm_runtime_bench PRIVATE -Wall -Wextra)

# f32 against f16 KV cache, alternating in one process (issue 14).
add_executable(nuvec_kv_cache_bench ${CMAKE_CURRENT_LIST_DIR}/kv_cache_bench.cc)
target_link_libraries(nuvec_kv_cache_bench PRIVATE nuvec nuvec_lm_internals nuvec_bench_support)
target_compile_options(nuvec_kv_cache_bench PRIVATE -Wall -Wextra)
