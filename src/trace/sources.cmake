# Event traces: the file format (include/nuvec/trace.h, docs/trace-format.md)
# and the replay engine (src/trace/replay.h) behind `nuvec replay`.
target_sources(nuvec PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/trace_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/replay.cc
  ${CMAKE_CURRENT_LIST_DIR}/replay_malloc.cc
  ${CMAKE_CURRENT_LIST_DIR}/replay_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/pickle_writer.cc
  ${CMAKE_CURRENT_LIST_DIR}/torch_snapshot.cc
)
# zlib reads gzip-compressed traces (traces/*.jsonl.gz).
find_package(ZLIB REQUIRED)
target_link_libraries(nuvec PRIVATE ZLIB::ZLIB)
