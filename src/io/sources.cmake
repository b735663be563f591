# Checkpoint formats (nuvec_io): tensors, then one folder of sources each.
target_sources(nuvec_io PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/tensor.cc
  ${CMAKE_CURRENT_LIST_DIR}/parallel_read.cc  # positioned reads from a few threads
  ${CMAKE_CURRENT_LIST_DIR}/read_ranges.cc    # the read path of every loader
  ${CMAKE_CURRENT_LIST_DIR}/tensor_placement.cc  # map or read: the one rule of every loader
)
include(${CMAKE_CURRENT_LIST_DIR}/safetensors/sources.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/npy/sources.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/gguf/sources.cmake)
