# safetensors: one file per concern (hostile headers, loading, saving,
# fixtures from other writers), and safetensors_dump for the interop script
# (tools/interop/safetensors_interop.py). Included from tests/CMakeLists.txt.
set(NUVEC_SAFETENSORS_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

foreach(name safetensors_hostile_test safetensors_load_test safetensors_save_test safetensors_align_test
             safetensors_fixtures_test safetensors_shard_refusal_test)
  nuvec_test(${name} DIR io/safetensors DEFINITIONS NUVEC_SAFETENSORS_FIXTURES="${NUVEC_SAFETENSORS_TEST_DIR}/fixtures")
endforeach()

add_executable(safetensors_dump ${NUVEC_SAFETENSORS_TEST_DIR}/safetensors_dump.cc)
target_link_libraries(safetensors_dump PRIVATE nuvec)
target_compile_options(safetensors_dump PRIVATE -Wall -Wextra)
set_target_properties(safetensors_dump PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/io/safetensors)
