// Internal: the per-device kernels behind ops/norm_ops.h over raw pointers, in fg::ops::cpu
// (ops/cpu/norm.cc) and, in CUDA builds, fg::ops::cuda (ops/cuda/norm_kernels.cu) with the same
// signatures (device pointers there). Each row is reduced by one thread (CPU) or one warp (CUDA) in
// a fixed order; the parameter gradients' column sums run in an order that depends on n only:
// deterministic on each device. Not public API.
#pragma once

#include <cstdint>

#define FG_NORM_KERNEL_DECLS                                                                      \
  /* Per row r of x [n, d]: rstd[r] = 1 / sqrt(biased variance + eps), xhat = (x - mean) rstd,    \
     y = xhat * gain + bias. */                                                                   \
  void LayerNormRows(const float* x, const float* gain, const float* bias, int64_t n, int64_t d,  \
                     float eps, float* xhat, float* rstd, float* y);                              \
  /* From gy = dL/dy: gx = rstd (t - mean(t) - xhat mean(t xhat)) per row, t = gy * gain;         \
     ggain[j] = sum over rows of gy xhat, gbias[j] = sum over rows of gy. A null output is        \
     skipped. */                                                                                  \
  void LayerNormRowsBackward(const float* gy, const float* gain, const float* xhat,               \
                             const float* rstd, int64_t n, int64_t d, float* gx, float* ggain,    \
                             float* gbias);

namespace fg::ops {
namespace cpu {
FG_NORM_KERNEL_DECLS
}  // namespace cpu
namespace cuda {
FG_NORM_KERNEL_DECLS
}  // namespace cuda
}  // namespace fg::ops
