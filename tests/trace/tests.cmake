# Trace files and replay (include/nuvec/trace.h, src/trace/replay.h): one
# executable per file; suites are named Trace* so `ctest -R Trace` runs them.
nuvec_wanted_tests(names trace_file_test trace_replay_test)
foreach(name IN LISTS names)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.cc)
  target_link_libraries(${name} PRIVATE nuvec_test_support)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/trace)
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
endforeach()
# The gzip test writes its file with zlib.
if(TARGET trace_file_test)
  target_link_libraries(trace_file_test PRIVATE ZLIB::ZLIB)
endif()
