// Internal to the CUDA backend: the calling thread's cuBLAS and cuSPARSE handles, created on first
// use (math_libs.h loads the libraries) and bound to the thread's stream (cuda_util.h).
// Thread-safe: one pair per thread.
#pragma once

#include "flexgraph/ops/cuda/math_libs.h"

namespace fg::ops::cuda {

cublasHandle_t CublasHandle();
cusparseHandle_t CusparseHandle();

[[noreturn]] void FailLibrary(const char* library, int status, const char* message,
                              const char* expr, const char* file, int line);

#define FG_CUBLAS_CHECK(expr)                                                               \
  do {                                                                                      \
    const cublasStatus_t fg_st_ = (expr);                                                   \
    if (fg_st_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      ::fg::ops::cuda::FailLibrary("cuBLAS", static_cast<int>(fg_st_),                      \
                                   ::fg::ops::cuda::Cublas().status_string(fg_st_), #expr, __FILE__, __LINE__); \
    }                                                                                       \
  } while (0)

#define FG_CUSPARSE_CHECK(expr)                                                              \
  do {                                                                                       \
    const cusparseStatus_t fg_st_ = (expr);                                                  \
    if (fg_st_ != CUSPARSE_STATUS_SUCCESS) {                                                 \
      ::fg::ops::cuda::FailLibrary("cuSPARSE", static_cast<int>(fg_st_),                     \
                                   ::fg::ops::cuda::Cusparse().error_string(fg_st_), #expr, __FILE__, __LINE__); \
    }                                                                                        \
  } while (0)

}  // namespace fg::ops::cuda
