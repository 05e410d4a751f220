// Internal to the CUDA backend: cuBLAS and cuSPARSE, loaded on first use (dlopen) rather than at
// start-up. Mapping cuBLAS costs a process about 210 MiB of resident memory and 70 ms before main,
// which every CPU-only run, worker and coordinator would otherwise pay. The first call loads the
// library and resolves every entry point below; a library or symbol that cannot be loaded aborts
// with a message naming it. Thread-safe.
#pragma once

#include <cublas_v2.h>
#include <cusparse.h>

namespace fg::ops::cuda {

struct CublasApi {
  decltype(&::cublasCreate_v2) create;
  decltype(&::cublasDestroy_v2) destroy;
  decltype(&::cublasSetStream_v2) set_stream;
  decltype(&::cublasSgemm_v2) sgemm;
  decltype(&::cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&::cublasGetStatusString) status_string;
};

struct CusparseApi {
  decltype(&::cusparseCreate) create;
  decltype(&::cusparseDestroy) destroy;
  decltype(&::cusparseSetStream) set_stream;
  decltype(&::cusparseCreateConstCsr) create_const_csr;
  decltype(&::cusparseCreateConstDnMat) create_const_dn_mat;
  decltype(&::cusparseCreateDnMat) create_dn_mat;
  decltype(&::cusparseDestroySpMat) destroy_sp_mat;
  decltype(&::cusparseDestroyDnMat) destroy_dn_mat;
  decltype(&::cusparseSpMM_bufferSize) spmm_buffer_size;
  decltype(&::cusparseSpMM) spmm;
  decltype(&::cusparseGetErrorString) error_string;
};

const CublasApi& Cublas();
const CusparseApi& Cusparse();
// Whether this process has mapped either library (tests of the lazy loading).
bool MathLibrariesLoaded();

}  // namespace fg::ops::cuda
