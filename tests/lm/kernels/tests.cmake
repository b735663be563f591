# The LM kernels (src/lm/kernels): linear() on every instruction set this CPU
# has, against the reference loops, and the thread pool. Suites are named
# Kernel* so `ctest -R Kernel` runs them.
nuvec_wanted_tests(names kernel_linear_test kernel_thread_pool_test kernel_roofline_test)
foreach(name IN LISTS names)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.cc)
  target_link_libraries(${name} PRIVATE nuvec_test_support)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/lm/kernels)
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)
endforeach()
