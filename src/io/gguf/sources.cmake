# GGUF reading (include/nuvec/io/gguf.h).
target_sources(nuvec_io PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/ggml_types.cc
  ${CMAKE_CURRENT_LIST_DIR}/gguf_cursor.cc
  ${CMAKE_CURRENT_LIST_DIR}/gguf_metadata.cc
  ${CMAKE_CURRENT_LIST_DIR}/gguf_parse.cc
  ${CMAKE_CURRENT_LIST_DIR}/gguf_load.cc
)
