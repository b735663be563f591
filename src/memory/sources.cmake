# The core (nuvec_core): the accounting allocator over its block caches,
# Device, the trace recorder and the trace file format, and reading input
# files as hostile input. It knows no backend (src/cpu, src/cuda).
target_sources(nuvec_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/../version.cc
  ${CMAKE_CURRENT_LIST_DIR}/../device.cc
  ${CMAKE_CURRENT_LIST_DIR}/allocator.cc
  ${CMAKE_CURRENT_LIST_DIR}/thread_caches.cc
  ${CMAKE_CURRENT_LIST_DIR}/thread_registry.cc
  ${CMAKE_CURRENT_LIST_DIR}/arena.cc
  ${CMAKE_CURRENT_LIST_DIR}/block_cache.cc
  ${CMAKE_CURRENT_LIST_DIR}/arena_cache.cc
  ${CMAKE_CURRENT_LIST_DIR}/file_mapping.cc
  ${CMAKE_CURRENT_LIST_DIR}/whole_block_cache.cc
  ${CMAKE_CURRENT_LIST_DIR}/buffer_cache.cc
  ${CMAKE_CURRENT_LIST_DIR}/free_index.cc
  ${CMAKE_CURRENT_LIST_DIR}/mapping.cc
  ${CMAKE_CURRENT_LIST_DIR}/memory.cc
  ${CMAKE_CURRENT_LIST_DIR}/memory_stats.cc
  ${CMAKE_CURRENT_LIST_DIR}/residency.cc
  ${CMAKE_CURRENT_LIST_DIR}/trace_recorder.cc
  ${CMAKE_CURRENT_LIST_DIR}/trace_tag.cc
  ${CMAKE_CURRENT_LIST_DIR}/trace_signals.cc
  ${CMAKE_CURRENT_LIST_DIR}/trace_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/input_file.cc
)
target_link_libraries(nuvec_core
  PUBLIC fmt::fmt nlohmann_json::nlohmann_json Threads::Threads
  PRIVATE $<BUILD_INTERFACE:Boost::boost>)  # header-only: Boost.Intrusive
# zlib reads gzip-compressed traces (traces/*.jsonl.gz).
find_package(ZLIB REQUIRED)
target_link_libraries(nuvec_core PRIVATE ZLIB::ZLIB)
