# safetensors: header parsing, checkpoint resolution, loading, saving, footprints.
target_sources(nuvec_io PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/json_events.cc
  ${CMAKE_CURRENT_LIST_DIR}/header_format.cc
  ${CMAKE_CURRENT_LIST_DIR}/header_parser.cc
  ${CMAKE_CURRENT_LIST_DIR}/header_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint_files.cc
  ${CMAKE_CURRENT_LIST_DIR}/tensor_filter.cc
  ${CMAKE_CURRENT_LIST_DIR}/load_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/loader.cc
  ${CMAKE_CURRENT_LIST_DIR}/footprint.cc
  ${CMAKE_CURRENT_LIST_DIR}/aligned_layout.cc
  ${CMAKE_CURRENT_LIST_DIR}/atomic_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/saver.cc
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint_alignment.cc
)
