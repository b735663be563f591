# The CUDA backend's tests (docs/cuda.md). Built wherever the CUDA toolkit
# is; the GPU tests skip on a machine without a GPU, the others (size
# classes, the upload plan, the errors without a GPU) run everywhere.
add_executable(cuda_upload_plan_test ${CMAKE_CURRENT_LIST_DIR}/cuda_upload_plan_test.cc)
target_link_libraries(cuda_upload_plan_test PRIVATE nuvec_test_support)
target_compile_options(cuda_upload_plan_test PRIVATE -Wall -Wextra)
set_target_properties(cuda_upload_plan_test PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/cuda)
gtest_discover_tests(cuda_upload_plan_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)

if(NUVEC_CUDA)
  foreach(name cuda_device_test cuda_stream_test cuda_upload_test)
    add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.cc)
    target_link_libraries(${name} PRIVATE nuvec_test_support CUDA::cudart_static)
    target_compile_options(${name} PRIVATE -Wall -Wextra)
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/cuda)
    gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)
  endforeach()
endif()
