# The CUDA backend's tests (docs/cuda.md). Built wherever the CUDA toolkit
# is; the GPU tests skip on a machine without a GPU, the others (size
# classes, the upload plan, the files behind mappings, the errors without a
# GPU) run everywhere.
nuvec_wanted_tests(names cuda_upload_plan_test cuda_file_sources_test cuda_arena_commit_test)
foreach(name IN LISTS names)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.cc)
  target_link_libraries(${name} PRIVATE nuvec_test_support)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/cuda)
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
endforeach()

if(NUVEC_CUDA)
  nuvec_wanted_tests(names cuda_device_test cuda_stream_test cuda_upload_test cuda_multi_gpu_test)
  foreach(name IN LISTS names)
    add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.cc)
    target_link_libraries(${name} PRIVATE nuvec_test_support CUDA::cudart_static)
    target_compile_options(${name} PRIVATE -Wall -Wextra)
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/cuda)
    gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)
  endforeach()
endif()
