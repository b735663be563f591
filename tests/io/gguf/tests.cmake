# GGUF tests: one file per concern, each test case its own ctest test.
foreach(name gguf_parse_test gguf_hostile_test gguf_load_test)
  nuvec_test(${name} DIR io/gguf TIMEOUT 120 INCLUDES ${CMAKE_CURRENT_LIST_DIR}/../..)
endforeach()
