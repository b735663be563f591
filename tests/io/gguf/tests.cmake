# GGUF tests: one executable per file, each test case its own ctest test.
nuvec_wanted_tests(names gguf_parse_test gguf_hostile_test gguf_load_test)
foreach(name IN LISTS names)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.cc)
  target_link_libraries(${name} PRIVATE nuvec_test_support)
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../..)
  target_compile_options(${name} PRIVATE -Wall -Wextra)
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
endforeach()
