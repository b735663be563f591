# NumPy .npy reading (include/nuvec/io/npy.h).
target_sources(nuvec_io PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/npy_dict.cc
  ${CMAKE_CURRENT_LIST_DIR}/npy_header.cc
  ${CMAKE_CURRENT_LIST_DIR}/npy_load.cc
)
