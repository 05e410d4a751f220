// Internal: the per-device kernels behind ops/edge_ops.h over raw pointers, in fg::ops::cpu
// (ops/cpu/edge.cc) and, in CUDA builds, fg::ops::cuda (ops/cuda/edge_kernels.cu) with the same
// signatures (device pointers there). Every output element is written by one thread, summing in
// entry order on both devices: deterministic. Not public API.
#pragma once

#include <cstdint>

#define FG_EDGE_KERNEL_DECLS                                                                       \
  /* out[k] = [xs[col[k]] | xd[row of k] | e[k]] over the nnz entries (e null when de == 0). */    \
  void EdgeInput(const int64_t* off, const int32_t* col, int64_t rows, int64_t nnz,                \
                 const float* xs, int64_t ds, const float* xd, int64_t dd, const float* e,         \
                 int64_t de, float* out);                                                          \
  /* gxs[c] = sum over transposed entries t of column c of g[perm[t], 0:ds] (null: skipped);       \
     gxd[r] = sum over row r's entries k of g[k, ds:ds+dd] (null: skipped); ge[k] = g[k, ds+dd:]. \
   */                                                                                              \
  void EdgeInputBackward(const int64_t* off, int64_t rows, int64_t nnz, const int64_t* t_off,      \
                         const int32_t* perm, int64_t cols, const float* g, int64_t ds,            \
                         int64_t dd, int64_t de, float* gxs, float* gxd, float* ge);               \
  void SegmentStd(const int64_t* off, int64_t segs, const float* x, int64_t d, float eps,          \
                  float* y);                                                                       \
  /* Writes the rows of non-empty segments; the caller zeroes gx. */                               \
  void SegmentStdBackward(const int64_t* off, int64_t segs, const float* x, const float* y,        \
                          const float* g, int64_t d, float* gx);

namespace fg::ops {
namespace cpu {
FG_EDGE_KERNEL_DECLS
}  // namespace cpu
namespace cuda {
FG_EDGE_KERNEL_DECLS
}  // namespace cuda
}  // namespace fg::ops
