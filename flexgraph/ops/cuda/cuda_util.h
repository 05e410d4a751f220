// Internal to the CUDA backend: error checks, the per-thread execution context (stream, cuBLAS and
// cuSPARSE handles, scratch buffers) and launch helpers. Included by ops/cuda/*.cc and *.cu only;
// free of Abseil so nvcc compiles it quickly.
//
// Streams: each host thread issues work on its own stream (created on first use, non-blocking), so
// every worker has one stream; a worker may install its own with SetCurrentStream. All kernels,
// cuBLAS/cuSPARSE calls and copies of a thread are ordered on that stream. Thread-safe: every
// thread has its own context.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fg::ops::cuda {

// Aborts naming the failed call, the file and line, and the CUDA error.
[[noreturn]] void FailCuda(int code, const char* error_name, const char* error_string,
                           const char* expr, const char* file, int line);

#define FG_CUDA_CHECK(expr)                                                                      \
  do {                                                                                           \
    const cudaError_t fg_err_ = (expr);                                                          \
    if (fg_err_ != cudaSuccess) {                                                                \
      ::fg::ops::cuda::FailCuda(static_cast<int>(fg_err_), cudaGetErrorName(fg_err_),            \
                                cudaGetErrorString(fg_err_), #expr, __FILE__, __LINE__);         \
    }                                                                                            \
  } while (0)

// Checks the launch that just happened on this thread (configuration errors; execution errors
// surface at the next synchronisation).
#define FG_CUDA_CHECK_LAUNCH() FG_CUDA_CHECK(cudaGetLastError())

// The calling thread's stream.
cudaStream_t CurrentStream();
// Makes `stream` the calling thread's stream (after synchronising the previous one, so scratch
// buffers are never shared by two streams). nullptr restores the thread's own stream.
void SetCurrentStream(cudaStream_t stream);

// A device buffer of at least `bytes` owned by the calling thread, for scratch use by one op at a
// time (slot 0: library workspace, 1 and 2: converted index arrays and constants). Stream-ordered:
// reuse by the next op on the same stream is safe.
void* ThreadScratch(int slot, size_t bytes);

// Launch geometry: 256 threads per block, enough blocks for n items capped at a grid-stride limit.
constexpr int kThreads = 256;
inline unsigned int BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(blocks < 1 ? 1 : (blocks > (1 << 20) ? (1 << 20) : blocks));
}

// for (i = this thread's first item; i < n; i += all threads): kernels cover any n with any grid.
#define FG_GRID_STRIDE(i, n)                                                                 \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);     \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// Kernels that split a flat index into (row, column) are templates on the index type, and their
// launchers pick uint32_t below kIndex32Limit items (a 64-bit division per element costs more
// than the element's memory traffic); i plus the grid's stride then stays below 2^32.
constexpr int64_t kIndex32Limit = int64_t{1} << 31;
#define FG_GRID_STRIDE_AS(Index, i, n)                                                         \
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);          \
       i += static_cast<Index>(gridDim.x) * blockDim.x)

// Internal launchers (ops/cuda/*.cu) used by the library-backed entry points (ops/cuda/*.cc).
void LaunchSpmmElementwise(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads,
                           int64_t rows, const float* x, int64_t width, int mean, float* out);
void LaunchOffsetsToInt32(const int64_t* off, int64_t n, int32_t* out);
void LaunchFill(float* p, float value, int64_t n);
void LaunchScaleByInverseDegree(const int64_t* off, int64_t rows, int64_t width, float* out);
// w[e] = 1 / degree of e's row, for every entry e of the CSR (its offsets).
void LaunchInverseDegreeValues(const int64_t* off, int64_t rows, float* w);

}  // namespace fg::ops::cuda
