# The LM kernels against the machine's bounds (issue 5): nuvec_roofline
# measures read bandwidth, decode-shaped GEMV and prefill-shaped GEMM in one
# run, with OpenBLAS (Debian's libopenblas-dev) as the reference GEMM where
# it is installed. Run it with bench/lm/run_roofline.sh; compare two builds of
# it (a change's before and after) with bench/lm/compare_roofline.py.
add_executable(nuvec_roofline ${CMAKE_CURRENT_LIST_DIR}/roofline.cc)
target_link_libraries(nuvec_roofline PRIVATE nuvec nuvec_lm_internals)
target_compile_options(nuvec_roofline PRIVATE -Wall -Wextra)
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(OPENBLAS QUIET IMPORTED_TARGET openblas)
endif()
if(OPENBLAS_FOUND)
  target_link_libraries(nuvec_roofline PRIVATE PkgConfig::OPENBLAS ${CMAKE_DL_LIBS})
  target_compile_definitions(nuvec_roofline PRIVATE NUVEC_HAVE_OPENBLAS)
else()
  message(STATUS "nuvec_roofline: OpenBLAS not found (libopenblas-dev); it will measure nuvec only")
endif()

# quant_linear()'s integer path per weight type: GB/s of weights and GMAC/s
# per thread, in cache and streaming (issue 14; run_quant_dot_bench.sh).
add_executable(nuvec_quant_dot_bench ${CMAKE_CURRENT_LIST_DIR}/quant_dot_bench.cc)
target_link_libraries(nuvec_quant_dot_bench PRIVATE nuvec nuvec_lm_internals benchmark::benchmark)
target_compile_options(nuvec_quant_dot_bench PRIVATE -Wall -Wextra)
