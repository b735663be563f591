# How the library is built, decided before its targets exist: static or
# shared, with or without CUDA, and the version header. Included from the top
# CMakeLists.txt before the first add_library.

# Static (the default) or shared: CMake's own switch, so every add_library
# without a type follows it. The installed libraries are position-independent
# either way (cmake/NuvecInstall.cmake), so a static one can be linked into
# shared objects (the Python module, the PyTorch plugin).
option(BUILD_SHARED_LIBS "Build nuvec as a shared library (default: static)" OFF)

# NUVEC_WITH_CUDA: default on when the toolkit is found, so a plain configure
# builds what the machine can; -DNUVEC_WITH_CUDA=OFF builds without it on a
# machine that has it (src/cuda/sources.cmake then finds no toolkit), and
# -DNUVEC_WITH_CUDA=ON without a toolkit is an error rather than a silent CPU build.
if(NOT DEFINED NUVEC_WITH_CUDA)
  find_package(CUDAToolkit QUIET)
  set(_nuvec_cuda_default ${CUDAToolkit_FOUND})
  if(NOT _nuvec_cuda_default)
    set(_nuvec_cuda_default OFF)
  endif()
endif()
option(NUVEC_WITH_CUDA "Build the CUDA backend (default: on when the CUDA toolkit is found)" ${_nuvec_cuda_default})
if(NUVEC_WITH_CUDA)
  set(CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit OFF)
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    message(FATAL_ERROR "nuvec: NUVEC_WITH_CUDA is ON but no CUDA toolkit was found: "
                        "put nvcc on PATH (or set CUDAToolkit_ROOT), or configure with -DNUVEC_WITH_CUDA=OFF")
  endif()
else()
  set(CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit ON)
endif()

# include/nuvec/version.h, from project(VERSION); nuvec::version() (src/version.cc)
# says which version the library linked was built as.
configure_file(${CMAKE_CURRENT_LIST_DIR}/version.h.in ${PROJECT_BINARY_DIR}/include/nuvec/version.h @ONLY)
