# Replaying event traces (nuvec_trace): the replay engine (include/nuvec/trace/replay.h)
# behind `nuvec replay`. The trace file format itself is the core's
# (include/nuvec/trace.h, src/memory/trace_file.cc, docs/trace-format.md).
target_sources(nuvec_trace PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/replay.cc
  ${CMAKE_CURRENT_LIST_DIR}/replay_malloc.cc
  ${CMAKE_CURRENT_LIST_DIR}/replay_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/pickle_writer.cc
  ${CMAKE_CURRENT_LIST_DIR}/torch_snapshot.cc
)
