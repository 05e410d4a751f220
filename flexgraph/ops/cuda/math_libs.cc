#include "flexgraph/ops/cuda/math_libs.h"

#include <dlfcn.h>

#include <atomic>
#include <string>

#include "flexgraph/base/logging.h"

namespace fg::ops::cuda {
namespace {

#define FG_STRINGIFY_(x) #x
#define FG_STRINGIFY(x) FG_STRINGIFY_(x)

std::atomic<bool> loaded{false};

// The library `soname` (searched as the dynamic loader searches: RUNPATH, LD_LIBRARY_PATH, the
// system's cache), never unloaded.
void* Open(const char* library, const char* soname) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  FG_CHECK(handle != nullptr) << library << ": cannot load " << soname << " (" << dlerror()
                              << "); it comes with the CUDA toolkit: put its directory on "
                                 "LD_LIBRARY_PATH";
  loaded = true;
  return handle;
}

template <typename Fn>
void Resolve(void* handle, const char* library, const char* symbol, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  FG_CHECK(*fn != nullptr) << library << ": " << symbol << " is missing from the loaded library";
}

}  // namespace

const CublasApi& Cublas() {
  static const CublasApi api = [] {
    const char* name = "cuBLAS";
    void* h = Open(name, "libcublas.so." FG_STRINGIFY(CUBLAS_VER_MAJOR));
    CublasApi a;
    Resolve(h, name, "cublasCreate_v2", &a.create);
    Resolve(h, name, "cublasDestroy_v2", &a.destroy);
    Resolve(h, name, "cublasSetStream_v2", &a.set_stream);
    Resolve(h, name, "cublasSgemm_v2", &a.sgemm);
    Resolve(h, name, "cublasSgemmStridedBatched", &a.sgemm_strided_batched);
    Resolve(h, name, "cublasGetStatusString", &a.status_string);
    return a;
  }();
  return api;
}

const CusparseApi& Cusparse() {
  static const CusparseApi api = [] {
    const char* name = "cuSPARSE";
    void* h = Open(name, "libcusparse.so." FG_STRINGIFY(CUSPARSE_VER_MAJOR));
    CusparseApi a;
    Resolve(h, name, "cusparseCreate", &a.create);
    Resolve(h, name, "cusparseDestroy", &a.destroy);
    Resolve(h, name, "cusparseSetStream", &a.set_stream);
    Resolve(h, name, "cusparseCreateConstCsr", &a.create_const_csr);
    Resolve(h, name, "cusparseCreateConstDnMat", &a.create_const_dn_mat);
    Resolve(h, name, "cusparseCreateDnMat", &a.create_dn_mat);
    Resolve(h, name, "cusparseDestroySpMat", &a.destroy_sp_mat);
    Resolve(h, name, "cusparseDestroyDnMat", &a.destroy_dn_mat);
    Resolve(h, name, "cusparseSpMM_bufferSize", &a.spmm_buffer_size);
    Resolve(h, name, "cusparseSpMM", &a.spmm);
    Resolve(h, name, "cusparseGetErrorString", &a.error_string);
    return a;
  }();
  return api;
}

bool MathLibrariesLoaded() { return loaded; }

}  // namespace fg::ops::cuda
