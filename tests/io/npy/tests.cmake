# npy tests: one file per concern, each test case its own ctest test.
foreach(name npy_header_test npy_load_test npy_fixture_test)
  nuvec_test(${name} DIR io/npy TIMEOUT 120 INCLUDES ${CMAKE_CURRENT_LIST_DIR}/../..
             DEFINITIONS NUVEC_NPY_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
endforeach()

# npy_dump for the interop script (tools/interop/npy_interop.py).
add_executable(npy_dump ${CMAKE_CURRENT_LIST_DIR}/npy_dump.cc)
target_link_libraries(npy_dump PRIVATE nuvec)
target_include_directories(npy_dump PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../safetensors)
target_compile_options(npy_dump PRIVATE -Wall -Wextra)
set_target_properties(npy_dump PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/io/npy)
