# npy tests: one executable per file, each test case its own ctest test.
nuvec_wanted_tests(names npy_header_test npy_load_test npy_fixture_test)
foreach(name IN LISTS names)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.cc)
  target_link_libraries(${name} PRIVATE nuvec_test_support)
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../..)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  target_compile_definitions(${name} PRIVATE NUVEC_NPY_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
endforeach()

# npy_dump for the interop script (tools/interop/npy_interop.py).
add_executable(npy_dump ${CMAKE_CURRENT_LIST_DIR}/npy_dump.cc)
target_link_libraries(npy_dump PRIVATE nuvec)
target_include_directories(npy_dump PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../safetensors)
target_compile_options(npy_dump PRIVATE -Wall -Wextra)
set_target_properties(npy_dump PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/io/npy)
