# Locates FlexGraph's dependencies (all from Debian packages) and defines imported targets for those
# without a CMake config of their own.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(ZLIB REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)

find_package(OpenBLAS CONFIG REQUIRED)
add_library(fg_openblas INTERFACE)
target_include_directories(fg_openblas SYSTEM INTERFACE ${OpenBLAS_INCLUDE_DIRS})
target_link_libraries(fg_openblas INTERFACE ${OpenBLAS_LIBRARIES})

find_path(METIS_INCLUDE_DIR metis.h REQUIRED)
find_library(METIS_LIBRARY metis REQUIRED)
add_library(fg_metis INTERFACE)
target_include_directories(fg_metis SYSTEM INTERFACE ${METIS_INCLUDE_DIR})
target_link_libraries(fg_metis INTERFACE ${METIS_LIBRARY})

if(FLEXGRAPH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(FLEXGRAPH_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# CUDA backend: AUTO builds it when nvcc is found.
set(FLEXGRAPH_HAVE_CUDA OFF)
if(NOT FLEXGRAPH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES "80;90")
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
    set(CMAKE_CUDA_STANDARD 20)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(FLEXGRAPH_HAVE_CUDA ON)
  elseif(FLEXGRAPH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FLEXGRAPH_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "FlexGraph CUDA backend: ${FLEXGRAPH_HAVE_CUDA}")

# Links static libraries whole (keeps self-registering models and commands, and every symbol a
# plugin may need).
function(fg_link_whole target)
  target_link_libraries(${target} PRIVATE -Wl,--whole-archive ${ARGN} -Wl,--no-whole-archive)
endfunction()
