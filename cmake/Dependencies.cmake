# Locates FlexGraph's dependencies (all from Debian packages) and defines imported targets for those
# without a CMake config of their own.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(ZLIB REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)  # client certificates checked per call (runtime/comm/auth.h)

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
    # CMake 3.25 does not know nvcc's C++20 flag (CMAKE_CUDA_STANDARD 20 fails to generate); nvcc
    # 12+ has it.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(FLEXGRAPH_HAVE_CUDA ON)
  elseif(FLEXGRAPH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FLEXGRAPH_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "FlexGraph CUDA backend: ${FLEXGRAPH_HAVE_CUDA}")
# fg_cuda_kernels(TARGET SOURCES...): an object library of CUDA kernels (.cu, nvcc) with the
# project's device flags: nvcc's warnings as errors, and ptxas reporting spills and local-memory use
# as warnings (hence errors). The project-wide warning flags are GCC flags.
function(fg_cuda_kernels target)
  add_library(${target} OBJECT ${ARGN})
  set_property(TARGET ${target} PROPERTY COMPILE_OPTIONS
    --Werror=all-warnings
    -Xptxas=-warn-spills,-warn-lmem-usage
    "SHELL:-Xcompiler -Wall,-Wextra,-Wno-unused-parameter,-Wno-sign-compare,-Werror"
  )
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
# NCCL (runtime/comm/nccl_communicator.h): with the CUDA backend, where the toolkit ships nccl.h. The
# library is loaded at run time (dlopen), so binaries start where it is missing.
set(FLEXGRAPH_HAVE_NCCL OFF)
if(FLEXGRAPH_HAVE_CUDA)
  find_path(FLEXGRAPH_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(FLEXGRAPH_NCCL_INCLUDE)
    set(FLEXGRAPH_HAVE_NCCL ON)
  endif()
endif()
message(STATUS "FlexGraph NCCL backend: ${FLEXGRAPH_HAVE_NCCL}")

# MPI backend (runtime/comm/mpi_communicator.h): AUTO builds it when an MPI C library is found.
set(FLEXGRAPH_HAVE_MPI OFF)
if(NOT FLEXGRAPH_MPI STREQUAL "OFF")
  set(MPI_CXX_SKIP_MPICXX ON)  # MPI's C API from C++; not the deprecated C++ bindings
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(FLEXGRAPH_HAVE_MPI ON)
  elseif(FLEXGRAPH_MPI STREQUAL "ON")
    message(FATAL_ERROR "FLEXGRAPH_MPI=ON but no MPI was found (Debian: libopenmpi-dev)")
  endif()
endif()
message(STATUS "FlexGraph MPI backend: ${FLEXGRAPH_HAVE_MPI}")

# Links static libraries whole (keeps self-registering models and commands, and every symbol a
# plugin may need).
function(fg_link_whole target)
  target_link_libraries(${target} PRIVATE -Wl,--whole-archive ${ARGN} -Wl,--no-whole-archive)
endfunction()
