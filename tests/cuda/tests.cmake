# The CUDA backend's tests (docs/cuda.md). Built wherever the CUDA toolkit
# is; the GPU tests skip on a machine without a GPU, the others (size
# classes, the upload plan, the files behind mappings, the errors without a
# GPU) run everywhere.
foreach(name cuda_upload_plan_test cuda_file_sources_test cuda_arena_commit_test)
  nuvec_test(${name} DIR cuda TIMEOUT 120 STANDALONE)
endforeach()

if(NUVEC_CUDA)
  foreach(name cuda_device_test cuda_stream_test cuda_upload_test cuda_multi_gpu_test)
    nuvec_test(${name} DIR cuda LIBRARIES ${NUVEC_CUDART} STANDALONE)
  endforeach()
endif()
