# Tokenizer encoding throughput (issue 15): bench/text/run_tokenize_bench.py.
add_executable(nuvec_tokenize_bench ${CMAKE_CURRENT_LIST_DIR}/tokenize_bench.cc)
target_link_libraries(nuvec_tokenize_bench PRIVATE nuvec fmt::fmt)
target_compile_options(nuvec_tokenize_bench PRIVATE -Wall -Wextra)
