// Kernel bodies of the per-row ops (log-softmax, L2 normalisation and their gradients), shared by the
// CPU kernels (ops/cpu/dense.cc) and the CUDA kernels (ops/cuda/row_kernels.cu). Each function
// processes one row; sums accumulate in double in column order, so CPU and GPU agree closely.
// Pure functions: thread-safe.
//
//   for (int64_t i = 0; i < rows; ++i) LogSoftmaxRow(x + i * cols, cols, y + i * cols);
#pragma once

#include <math.h>

#include <cstdint>

#include "flexgraph/base/hd.h"

namespace fg::ops::shared {

FG_HD void LogSoftmaxRow(const float* x, int64_t cols, float* y) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < cols; ++j) mx = fmaxf(mx, x[j]);
  double s = 0.0;
  for (int64_t j = 0; j < cols; ++j) s += exp(static_cast<double>(x[j] - mx));
  const float lse = mx + static_cast<float>(log(s));
  for (int64_t j = 0; j < cols; ++j) y[j] = x[j] - lse;
}

// gx = gy - exp(y) * sum(gy), with y the log-probabilities.
FG_HD void LogSoftmaxRowBackward(const float* y, const float* gy, int64_t cols, float* gx) {
  double s = 0.0;
  for (int64_t j = 0; j < cols; ++j) s += gy[j];
  for (int64_t j = 0; j < cols; ++j) gx[j] = gy[j] - expf(y[j]) * static_cast<float>(s);
}

// y = x / max(||x||, eps); returns the clamped norm.
FG_HD float RowL2NormalizeRow(const float* x, int64_t cols, float eps, float* y) {
  double s = 0.0;
  for (int64_t j = 0; j < cols; ++j) s += static_cast<double>(x[j]) * x[j];
  const float nrm = fmaxf(static_cast<float>(sqrt(s)), eps);
  for (int64_t j = 0; j < cols; ++j) y[j] = x[j] / nrm;
  return nrm;
}

// Gradient of RowL2NormalizeRow given its output y and clamped norm; linear (y = x / eps) when the
// norm was clamped.
FG_HD void RowL2NormalizeRowBackward(const float* y, float nrm, const float* gy, int64_t cols,
                                     float eps, float* gx) {
  double dot = 0.0;
  if (nrm > eps) {
    for (int64_t j = 0; j < cols; ++j) dot += static_cast<double>(y[j]) * gy[j];
  }
  for (int64_t j = 0; j < cols; ++j) gx[j] = (gy[j] - static_cast<float>(dot) * y[j]) / nrm;
}

}  // namespace fg::ops::shared
