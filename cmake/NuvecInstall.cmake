# `cmake --install`: the public headers, the libraries, the nuvec command,
# a CMake package (find_package(nuvec): nuvecConfig.cmake, its version file
# and the imported targets nuvec::<layer> and nuvec::nuvec) and a pkg-config
# file (nuvec.pc, the whole library).
# Included from the top CMakeLists.txt after every library target exists.
#
# A library target joins the package with one line below (nuvec_install_library):
# it is installed, exported as nuvec::<export name>, compiled
# position-independent (-fPIC, also when static), and its include
# directories in the source or build tree become the installed include/.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(NUVEC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/nuvec CACHE STRING
    "Where nuvecConfig.cmake is installed, relative to the prefix")

# Plain include paths inside the source or build tree hold for the build tree
# only; the export must not carry them (CMake refuses), so they are wrapped
# in $<BUILD_INTERFACE:...> and the installed include/ is added instead.
function(nuvec_install_library target export_name)
  get_target_property(includes ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(wrapped "")
  foreach(dir IN LISTS includes)
    string(FIND "${dir}/" "${PROJECT_SOURCE_DIR}/" in_source)
    string(FIND "${dir}/" "${PROJECT_BINARY_DIR}/" in_build)
    if(in_source EQUAL 0 OR in_build EQUAL 0)
      list(APPEND wrapped "$<BUILD_INTERFACE:${dir}>")
    elseif(dir)
      list(APPEND wrapped "${dir}")
    endif()
  endforeach()
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${wrapped}" EXPORT_NAME ${export_name}
                                              POSITION_INDEPENDENT_CODE ON
                                              VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
                                              # Shared layers find the layers they link beside them once installed.
                                              INSTALL_RPATH "\$ORIGIN")
  install(TARGETS ${target} EXPORT nuvecTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()

# The libraries: one per layer (cmake/NuvecLayers.cmake), exported as
# nuvec::core, nuvec::cpu, nuvec::io, nuvec::trace, nuvec::cuda,
# nuvec::text, nuvec::lm (each bringing the layers below it), and nuvec::nuvec,
# all of them.
get_property(_nuvec_installed_layers GLOBAL PROPERTY NUVEC_LAYERS)
foreach(layer IN LISTS _nuvec_installed_layers)
  nuvec_install_library(nuvec_${layer} ${layer})
endforeach()
install(TARGETS nuvec EXPORT nuvecTargets)
# Public headers: everything under include/nuvec, and the generated version.h.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/nuvec DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/nuvec/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nuvec)

# The CMake package. nuvecConfig.cmake finds what the exported targets link
# against (fmt, nlohmann_json, Threads, zlib, and the CUDA toolkit's static
# runtime in a CUDA build: CUDA::cudart_static brings -ldl -lrt -lpthread).
install(EXPORT nuvecTargets NAMESPACE nuvec:: DESTINATION ${NUVEC_INSTALL_CMAKEDIR} FILE nuvecTargets.cmake)
set(NUVEC_CONFIG_WITH_CUDA ${NUVEC_CUDA})
set(NUVEC_CONFIG_SHARED ${BUILD_SHARED_LIBS})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/nuvecConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/package/nuvecConfig.cmake
                              INSTALL_DESTINATION ${NUVEC_INSTALL_CMAKEDIR})
# 0.x releases make no promise across minor versions; from 1.0 on, the major version is the promise.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_nuvec_compatibility SameMinorVersion)
else()
  set(_nuvec_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/nuvecConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY ${_nuvec_compatibility})
install(FILES ${PROJECT_BINARY_DIR}/package/nuvecConfig.cmake ${PROJECT_BINARY_DIR}/package/nuvecConfigVersion.cmake
        DESTINATION ${NUVEC_INSTALL_CMAKEDIR})

# nuvec.pc. Static libraries need their dependencies on every link line, so
# they are in Libs (`pkg-config --libs nuvec` is then complete); shared ones
# record them themselves, so they are in Libs.private.
set(NUVEC_PC_DEPENDENCY_LIBS "-pthread")
set(NUVEC_PC_REQUIRES "fmt nlohmann_json")
set(NUVEC_PC_REQUIRES_PRIVATE "zlib libpcre2-8 libutf8proc")
if(NUVEC_WITH_SENTENCEPIECE)
  string(APPEND NUVEC_PC_REQUIRES_PRIVATE " sentencepiece")
endif()
if(NUVEC_CUDA AND BUILD_SHARED_LIBS)
  # The shared CUDA runtime, as libnuvec_cuda.so links it (src/cuda/sources.cmake).
  get_filename_component(_nuvec_cudart_dir "${CUDA_cudart_LIBRARY}" DIRECTORY)
  string(PREPEND NUVEC_PC_DEPENDENCY_LIBS "-L${_nuvec_cudart_dir} -lcudart ")
elseif(NUVEC_CUDA)
  # The static CUDA runtime: it loads the driver (libcuda) itself at run time,
  # and needs libdl and librt (part of libc since glibc 2.34, still named for older ones).
  get_filename_component(_nuvec_cudart_dir "${CUDA_cudart_static_LIBRARY}" DIRECTORY)
  string(PREPEND NUVEC_PC_DEPENDENCY_LIBS "-L${_nuvec_cudart_dir} -lcudart_static -ldl -lrt ")
endif()
# Every layer's library, each before the layers it links (the linker reads
# static archives in order).
set(_nuvec_pc_layers ${_nuvec_installed_layers})
list(REVERSE _nuvec_pc_layers)
list(TRANSFORM _nuvec_pc_layers PREPEND "-lnuvec_")
list(JOIN _nuvec_pc_layers " " _nuvec_pc_layer_libs)
if(BUILD_SHARED_LIBS)
  set(NUVEC_PC_LIBS "-L\${libdir} ${_nuvec_pc_layer_libs}")
  set(NUVEC_PC_LIBS_PRIVATE "${NUVEC_PC_DEPENDENCY_LIBS}")
else()
  set(NUVEC_PC_LIBS "-L\${libdir} ${_nuvec_pc_layer_libs} ${NUVEC_PC_DEPENDENCY_LIBS}")
  set(NUVEC_PC_LIBS_PRIVATE "")
  string(APPEND NUVEC_PC_REQUIRES " ${NUVEC_PC_REQUIRES_PRIVATE}")
  set(NUVEC_PC_REQUIRES_PRIVATE "")
endif()
# The prefix relative to the .pc file's folder, so that `cmake --install --prefix`
# anywhere gives a working file.
file(RELATIVE_PATH NUVEC_PC_PREFIX_FROM_PCFILEDIR /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" NUVEC_PC_PREFIX_FROM_PCFILEDIR "${NUVEC_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/nuvec.pc.in ${PROJECT_BINARY_DIR}/package/nuvec.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/nuvec.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/nuvec)
