# How test files become test programs. Included from tests/CMakeLists.txt.
#
# nuvec_test(name [DIR dir] ...) names one test file, tests/[DIR/]name.cc,
# each of whose cases becomes its own ctest test (discovered when ctest runs,
# so a build never runs them). Test files are compiled into one program per
# top folder of tests/ (tests/nuvec_core_tests for the files at the top,
# tests/lm/nuvec_lm_tests for everything under tests/lm, ...), as unity
# batches of NUVEC_TEST_UNITY_BATCH files. Why: each test file's compile
# time is almost all GoogleTest's, fmt's and the standard library's
# templates instantiated once more (a precompiled header did not help: it
# saves parsing, not instantiation), and each program's link pulls in every
# layer again; in CI those costs, three builds over, were a third of the run.
# ctest test names do not change (Suite.Case), nor do the sources.
#
# A file is a program of its own when it says STANDALONE (a script carries
# it to another machine and runs it by name: bench/cuda, bench/lm; or its
# ctest entry runs the whole program) or KEEP_OPTIMIZATION, or when
# NUVEC_TEST_GROUPS is OFF (one program per file, as the names say).
#
# DIR: its folder under tests/. LIBRARIES, DEFINITIONS, INCLUDES: what it
# needs beyond the library and GoogleTest (a group's program gets the union:
# the fixture paths are distinct macros). ENVIRONMENT and TIMEOUT apply to
# every case of the program (a group's: the union and the longest).
# KEEP_OPTIMIZATION: built without NUVEC_TEST_COMPILE_OPTIONS (CMakeLists.txt:
# -O0 in the sanitizer presets) because its own code is the work (a
# reference model run 10^6 times: at -O0 it ran 3x longer under ASan).
# Builds that leave the test out (NUVEC_TEST_SET) make nothing.
option(NUVEC_TEST_GROUPS "Compile the test files into one program per folder" ON)
set(NUVEC_TEST_UNITY_BATCH 8 CACHE STRING "Test files per unity batch in a grouped test program")

# One program: its sources, flags and ctest discovery.
function(_nuvec_test_program target output_dir sources keep_optimization timeout environment libraries definitions includes)
  add_executable(${target} ${sources})
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${output_dir})
  target_link_libraries(${target} PRIVATE nuvec_test_support ${libraries})
  add_dependencies(nuvec_tests ${target})
  target_compile_definitions(${target} PRIVATE ${definitions})
  target_include_directories(${target} PRIVATE ${includes})
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(NOT keep_optimization)
    target_compile_options(${target} PRIVATE ${NUVEC_TEST_COMPILE_OPTIONS})
  endif()
  set(properties TIMEOUT ${timeout})
  if(environment)
    list(APPEND properties ENVIRONMENT "${environment}")
  endif()
  gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST PROPERTIES ${properties})
endfunction()

function(nuvec_test name)
  if(NUVEC_TEST_SET STREQUAL "threaded" AND NOT name IN_LIST NUVEC_THREADED_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "KEEP_OPTIMIZATION;STANDALONE" "TIMEOUT;DIR" "ENVIRONMENT;LIBRARIES;DEFINITIONS;INCLUDES" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set(source ${PROJECT_SOURCE_DIR}/tests/${name}.cc)
  set(output_dir ${PROJECT_BINARY_DIR}/tests)
  set(group core)
  if(ARG_DIR)
    set(source ${PROJECT_SOURCE_DIR}/tests/${ARG_DIR}/${name}.cc)
    set(output_dir ${PROJECT_BINARY_DIR}/tests/${ARG_DIR})
    string(REGEX REPLACE "/.*" "" group "${ARG_DIR}")
  endif()
  if(ARG_STANDALONE OR ARG_KEEP_OPTIMIZATION OR NOT NUVEC_TEST_GROUPS)
    _nuvec_test_program(${name} ${output_dir} ${source} "${ARG_KEEP_OPTIMIZATION}" ${ARG_TIMEOUT}
                        "${ARG_ENVIRONMENT}" "${ARG_LIBRARIES}" "${ARG_DEFINITIONS}" "${ARG_INCLUDES}")
    set_property(GLOBAL PROPERTY NUVEC_TEST_PROGRAM_OF_${name} ${name})
    return()
  endif()
  set(program nuvec_${group}_tests)
  set_property(GLOBAL APPEND PROPERTY NUVEC_TEST_GROUP_NAMES ${group})
  set_property(GLOBAL APPEND PROPERTY NUVEC_TEST_GROUP_${group}_SOURCES ${source})
  foreach(list ENVIRONMENT LIBRARIES DEFINITIONS INCLUDES)
    set_property(GLOBAL APPEND PROPERTY NUVEC_TEST_GROUP_${group}_${list} ${ARG_${list}})
  endforeach()
  get_property(timeout GLOBAL PROPERTY NUVEC_TEST_GROUP_${group}_TIMEOUT)
  if(NOT timeout OR ARG_TIMEOUT GREATER timeout)
    set_property(GLOBAL PROPERTY NUVEC_TEST_GROUP_${group}_TIMEOUT ${ARG_TIMEOUT})
  endif()
  set_property(GLOBAL PROPERTY NUVEC_TEST_PROGRAM_OF_${name} ${program})
endfunction()

# Makes each group's program; called once every test file is named.
function(nuvec_test_programs)
  get_property(groups GLOBAL PROPERTY NUVEC_TEST_GROUP_NAMES)
  list(REMOVE_DUPLICATES groups)
  foreach(group IN LISTS groups)
    foreach(list SOURCES ENVIRONMENT LIBRARIES DEFINITIONS INCLUDES TIMEOUT)
      get_property(${list} GLOBAL PROPERTY NUVEC_TEST_GROUP_${group}_${list})
    endforeach()
    list(REMOVE_DUPLICATES ENVIRONMENT)
    set(output_dir ${PROJECT_BINARY_DIR}/tests)
    if(NOT group STREQUAL "core")
      set(output_dir ${PROJECT_BINARY_DIR}/tests/${group})
    endif()
    set(program nuvec_${group}_tests)
    _nuvec_test_program(${program} ${output_dir} "${SOURCES}" FALSE ${TIMEOUT}
                        "${ENVIRONMENT}" "${LIBRARIES}" "${DEFINITIONS}" "${INCLUDES}")
    set_target_properties(${program} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${NUVEC_TEST_UNITY_BATCH})
  endforeach()
endfunction()

# The program test file NAME is compiled into, in OUT (empty where this
# build leaves it out).
function(nuvec_test_program_of out name)
  get_property(program GLOBAL PROPERTY NUVEC_TEST_PROGRAM_OF_${name})
  set(${out} "${program}" PARENT_SCOPE)
endfunction()

# nuvec_tests_see(layer name...): the named tests' programs may include
# src/<layer>/ (the layer's internals target).
function(nuvec_tests_see layer)
  foreach(name IN LISTS ARGN)
    nuvec_test_program_of(program ${name})
    if(program)
      target_link_libraries(${program} PRIVATE nuvec_${layer}_internals)
    endif()
  endforeach()
endfunction()
