// Per-thread CUDA execution context: stream, library handles and scratch buffers (cuda_util.h,
// handles.h). Created lazily, released when the thread exits.
#include <array>

#include "flexgraph/base/logging.h"
#include "flexgraph/ops/cuda/cuda_util.h"
#include "flexgraph/ops/cuda/handles.h"
#include "flexgraph/tensor/device_alloc.h"

namespace fg::ops::cuda {
namespace {

struct Scratch {
  void* ptr = nullptr;
  size_t bytes = 0;
};

class ThreadContext {
 public:
  ~ThreadContext() {
    // Errors are ignored here: at process exit the runtime may already be shutting down.
    if (own_stream_ != nullptr) (void)cudaStreamSynchronize(own_stream_);
    for (Scratch& s : scratch_) DeviceFree(s.ptr, s.bytes);
    if (cublas_ != nullptr) (void)Cublas().destroy(cublas_);
    if (cusparse_ != nullptr) (void)Cusparse().destroy(cusparse_);
    if (own_stream_ != nullptr) (void)cudaStreamDestroy(own_stream_);
  }

  cudaStream_t stream() {
    if (installed_ != nullptr) return installed_;
    if (own_stream_ == nullptr) {
      FG_CUDA_CHECK(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
    }
    return own_stream_;
  }

  void Install(cudaStream_t s) {
    const cudaStream_t old = stream();
    FG_CUDA_CHECK(cudaStreamSynchronize(old));
    installed_ = s;
    const cudaStream_t now = stream();
    if (cublas_ != nullptr) FG_CUBLAS_CHECK(Cublas().set_stream(cublas_, now));
    if (cusparse_ != nullptr) FG_CUSPARSE_CHECK(Cusparse().set_stream(cusparse_, now));
  }

  cublasHandle_t cublas() {
    if (cublas_ == nullptr) {
      FG_CUBLAS_CHECK(Cublas().create(&cublas_));
      FG_CUBLAS_CHECK(Cublas().set_stream(cublas_, stream()));
    }
    return cublas_;
  }

  cusparseHandle_t cusparse() {
    if (cusparse_ == nullptr) {
      FG_CUSPARSE_CHECK(Cusparse().create(&cusparse_));
      FG_CUSPARSE_CHECK(Cusparse().set_stream(cusparse_, stream()));
    }
    return cusparse_;
  }

  void* scratch(int slot, size_t bytes) {
    FG_CHECK(slot >= 0 && slot < static_cast<int>(scratch_.size())) << "scratch slot " << slot;
    Scratch& s = scratch_[slot];
    if (s.bytes < bytes) {
      DeviceFree(s.ptr, s.bytes);  // stream-ordered: the block is only reused on this stream
      s.bytes = bytes + bytes / 2;  // grow geometrically
      s.ptr = DeviceAlloc(s.bytes);
    }
    return s.ptr;
  }

 private:
  cudaStream_t own_stream_ = nullptr;
  cudaStream_t installed_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cusparseHandle_t cusparse_ = nullptr;
  std::array<Scratch, 3> scratch_;
};

ThreadContext& Context() {
  thread_local ThreadContext ctx;
  return ctx;
}

}  // namespace

void FailCuda(int code, const char* error_name, const char* error_string, const char* expr,
              const char* file, int line) {
  FG_CHECK(false) << expr << " failed at " << file << ":" << line << ": " << error_name << " ("
                  << code << ", " << error_string << ")";
  __builtin_unreachable();
}

void FailLibrary(const char* library, int status, const char* message, const char* expr,
                 const char* file, int line) {
  FG_CHECK(false) << library << " call " << expr << " failed at " << file << ":" << line
                  << ": status " << status << " (" << message << ")";
  __builtin_unreachable();
}

cudaStream_t CurrentStream() { return Context().stream(); }
void SetCurrentStream(cudaStream_t stream) { Context().Install(stream); }
void* ThreadScratch(int slot, size_t bytes) { return Context().scratch(slot, bytes); }
cublasHandle_t CublasHandle() { return Context().cublas(); }
cusparseHandle_t CusparseHandle() { return Context().cusparse(); }

}  // namespace fg::ops::cuda
