# The CUDA backend (docs/cuda.md). Built when the CUDA toolkit is found; the
# GPU is only needed to run it. Without the toolkit, no_cuda.cc answers: no
# devices, and a clear error for Device::cuda.
find_package(CUDAToolkit QUIET)

# Always: size classes, the upload plan, the upload's result type and the
# files behind mappings are plain C++ (tested without a GPU).
target_sources(nuvec_cuda PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/size_classes.cc
  ${CMAKE_CURRENT_LIST_DIR}/upload_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/device_checkpoint.cc
  ${CMAKE_CURRENT_LIST_DIR}/file_sources.cc
  ${CMAKE_CURRENT_LIST_DIR}/cuda_device.cc
)

if(CUDAToolkit_FOUND)
  set(NUVEC_CUDA ON)  # tests/cuda and bench/cuda build when this is set
  message(STATUS "nuvec: CUDA backend on (CUDA ${CUDAToolkit_VERSION}, ${CUDAToolkit_INCLUDE_DIRS})")
  target_sources(nuvec_cuda PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/cuda_backend.cc
    ${CMAKE_CURRENT_LIST_DIR}/cuda_error.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver_api.cc
    ${CMAKE_CURRENT_LIST_DIR}/vmm_reservations.cc
    ${CMAKE_CURRENT_LIST_DIR}/host_copy.cc
    ${CMAKE_CURRENT_LIST_DIR}/staging.cc
    ${CMAKE_CURRENT_LIST_DIR}/upload.cc
    ${CMAKE_CURRENT_LIST_DIR}/upload_engine.cc
  )
  # The CUDA runtime a program of nuvec links (NUVEC_CUDART, also for the
  # tests, benchmarks and the Python module), so that a process holds one
  # copy of it. Static libraries: the static runtime, so binaries carry it
  # and need only the driver (libcuda) where they run. Shared libraries
  # (BUILD_SHARED_LIBS): the shared runtime, which libnuvec_cuda.so and the
  # program then share; a static copy inside libnuvec_cuda.so beside the
  # program's own would be two runtimes with two states in one process.
  if(BUILD_SHARED_LIBS)
    set(NUVEC_CUDART CUDA::cudart)
  else()
    set(NUVEC_CUDART CUDA::cudart_static)
  endif()
  target_link_libraries(nuvec_cuda PUBLIC ${NUVEC_CUDART})

  # The plugin of PyTorch's CUDAPluggableAllocator as a library of its own (the
  # Python module carries the same code: nuvec.torch.install()).
  # Only the nuvec_* functions are exported; nuvec and the CUDA runtime
  # inside it stay private to the library (--exclude-libs).
  add_library(nuvec_torch_alloc SHARED ${CMAKE_CURRENT_LIST_DIR}/torch_allocator.cc)
  target_link_libraries(nuvec_torch_alloc PRIVATE nuvec_cuda_internals ${NUVEC_CUDART})
  target_compile_options(nuvec_torch_alloc PRIVATE -Wall -Wextra -fvisibility=hidden)
  target_link_options(nuvec_torch_alloc PRIVATE -Wl,--exclude-libs,ALL)
  # Finds a libfmt copied beside it (a machine without fmt installed).
  set_target_properties(nuvec_torch_alloc PROPERTIES BUILD_RPATH "\$ORIGIN")
else()
  set(NUVEC_CUDA OFF)
  message(STATUS "nuvec: CUDA toolkit not found; building without the CUDA backend")
  target_sources(nuvec_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/no_cuda.cc)
endif()
