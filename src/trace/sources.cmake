# Event traces: the file format (include/nuvec/trace.h, docs/trace-format.md)
# and the replay engine (src/trace/replay.h) behind `nuvec replay`.
target_sources(nuvec PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/trace_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/replay.cc
  ${CMAKE_CURRENT_LIST_DIR}/replay_malloc.cc
  ${CMAKE_CURRENT_LIST_DIR}/replay_plan.cc
)
