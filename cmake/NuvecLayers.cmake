# The library's layers, one library target each (docs/architecture.md,
# "Layers"): nuvec_core, nuvec_cpu, nuvec_io, nuvec_trace, nuvec_cuda,
# nuvec_text, nuvec_lm, and `nuvec`, the umbrella that links them all.
#
# Public headers are include/nuvec/, seen by everyone. A layer's private
# headers live beside its sources, under src/<dir>/, and are included as
# "<dir>/name.h". No target has src/ on its include path: each layer gets an
# include root of its own in the build tree, layer_include/<layer>/, which
# holds one entry, a link <dir> -> src/<dir>. So a layer sees its own
# private headers and nothing else of src/; seeing another layer's private
# headers takes a `SEES` below (only layers it depends on), and a test or
# benchmark that needs a layer's internals links nuvec_<layer>_internals, per
# target (the nuvec command links none). tests/layering_test.py checks the
# direction of every include, tools/ included.

# nuvec_layer(<layer> DIR <folder under src/> [DEPENDS <layer>...] [SEES <layer>...])
#   DEPENDS: the layers below it that it links (publicly: their users need them);
#   SEES: those of them whose private headers it includes.
# The layer's sources come from its sources.cmake (target_sources(nuvec_<layer> ...)).
function(nuvec_layer layer)
  cmake_parse_arguments(ARG "" "DIR" "DEPENDS;SEES" ${ARGN})
  set(target nuvec_${layer})
  add_library(${target})  # static or shared, as BUILD_SHARED_LIBS says
  set(root ${PROJECT_BINARY_DIR}/layer_include/${layer})
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${ARG_DIR} ${root}/${ARG_DIR} SYMBOLIC)
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    PRIVATE ${root})
  foreach(below IN LISTS ARG_DEPENDS)
    target_link_libraries(${target} PUBLIC nuvec_${below})
  endforeach()
  # The layer's private headers, for the tests of its internals (and the few
  # benchmarks that measure them); never installed. A private
  # header may include those of the layers it sees, so they come along.
  add_library(${target}_internals INTERFACE)
  target_include_directories(${target}_internals INTERFACE ${root})
  target_link_libraries(${target}_internals INTERFACE ${target})
  foreach(below IN LISTS ARG_SEES)
    if(NOT below IN_LIST ARG_DEPENDS)
      message(FATAL_ERROR "nuvec_layer(${layer}): SEES ${below}, which it does not depend on")
    endif()
    # Build-tree only: the installed package has no private headers.
    target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:nuvec_${below}_internals>)
    target_link_libraries(${target}_internals INTERFACE nuvec_${below}_internals)
  endforeach()
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  # A shared layer must link everything it calls: a call into a layer it
  # does not DEPEND on (against the direction) is then a link error here,
  # not a symbol that happens to resolve in the program. (The sanitizers'
  # runtimes are the program's, so those builds leave it out.)
  if(BUILD_SHARED_LIBS AND NOT NUVEC_SANITIZE)
    target_link_options(${target} PRIVATE LINKER:--no-undefined)
  endif()
  set_target_properties(${target} PROPERTIES OUTPUT_NAME nuvec_${layer})
  set_property(GLOBAL APPEND PROPERTY NUVEC_LAYERS ${layer})
endfunction()
