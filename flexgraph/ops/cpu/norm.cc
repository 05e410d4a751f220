// CPU kernels of the normalisation ops (ops/norm_ops.h): a row per thread, its sums in 8 lanes
// (vectorised; the order, and so the result, depends only on d); the parameter gradients summed in
// row blocks that depend on n only, so results never depend on the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "flexgraph/base/parallel.h"
#include "flexgraph/ops/norm_kernels.h"

namespace fg::ops::cpu {
namespace {

inline float Sum8(const float* x, int64_t d) {
  float lane[8] = {};
  int64_t j = 0;
  for (; j + 8 <= d; j += 8) {
    for (int k = 0; k < 8; ++k) lane[k] += x[j + k];
  }
  float s = 0;
  for (; j < d; ++j) s += x[j];
  for (int k = 0; k < 8; ++k) s += lane[k];
  return s;
}

inline float Dot8(const float* x, const float* y, int64_t d) {
  float lane[8] = {};
  int64_t j = 0;
  for (; j + 8 <= d; j += 8) {
    for (int k = 0; k < 8; ++k) lane[k] += x[j + k] * y[j + k];
  }
  float s = 0;
  for (; j < d; ++j) s += x[j] * y[j];
  for (int k = 0; k < 8; ++k) s += lane[k];
  return s;
}

inline float SquaredDeviation8(const float* x, float mean, int64_t d) {
  float lane[8] = {};
  int64_t j = 0;
  for (; j + 8 <= d; j += 8) {
    for (int k = 0; k < 8; ++k) lane[k] += (x[j + k] - mean) * (x[j + k] - mean);
  }
  float s = 0;
  for (; j < d; ++j) s += (x[j] - mean) * (x[j] - mean);
  for (int k = 0; k < 8; ++k) s += lane[k];
  return s;
}

// Row blocks of the parameter gradients' partial sums: a function of n only.
int ParameterBlocks(int64_t n) { return static_cast<int>(std::clamp<int64_t>(n / 512, 1, 16)); }

}  // namespace

void LayerNormRows(const float* x, const float* gain, const float* bias, int64_t n, int64_t d, float eps,
                   float* xhat, float* rstd, float* y) {
  ParallelForRowChunks(n, d, [&](int64_t r) {
    const float* xr = x + r * d;
    const float mean = Sum8(xr, d) / d;
    const float rs = 1.0f / std::sqrt(SquaredDeviation8(xr, mean, d) / d + eps);
    rstd[r] = rs;
    float* hr = xhat + r * d;
    float* yr = y + r * d;
    for (int64_t j = 0; j < d; ++j) {
      hr[j] = (xr[j] - mean) * rs;
      yr[j] = hr[j] * gain[j] + bias[j];
    }
  });
}

void LayerNormRowsBackward(const float* gy, const float* gain, const float* xhat, const float* rstd, int64_t n,
                           int64_t d, float* gx, float* ggain, float* gbias) {
  if (gx != nullptr) {
    ParallelForRowChunks(n, d, [&](int64_t r) {
      const float* gr = gy + r * d;
      const float* hr = xhat + r * d;
      float* out = gx + r * d;
      for (int64_t j = 0; j < d; ++j) out[j] = gr[j] * gain[j];  // t, kept in `out` meanwhile
      const float s2 = Dot8(out, hr, d) / d;
      const float s1 = Sum8(out, d) / d;
      const float rs = rstd[r];
      for (int64_t j = 0; j < d; ++j) out[j] = rs * (out[j] - s1 - hr[j] * s2);
    });
  }
  if (ggain == nullptr && gbias == nullptr) return;
  const int blocks = ParameterBlocks(n);
  std::vector<float> partial(static_cast<size_t>(blocks) * 2 * d, 0.0f);
  ParallelBlocks(n, blocks, [&](int block, int64_t begin, int64_t end) {
    float* pg = partial.data() + static_cast<size_t>(block) * 2 * d;
    float* pb = pg + d;
    for (int64_t r = begin; r < end; ++r) {
      const float* gr = gy + r * d;
      const float* hr = xhat + r * d;
      for (int64_t j = 0; j < d; ++j) {
        pg[j] += gr[j] * hr[j];
        pb[j] += gr[j];
      }
    }
  });
  for (int64_t j = 0; j < d; ++j) {
    float sg = 0, sb = 0;
    for (int block = 0; block < blocks; ++block) {
      sg += partial[static_cast<size_t>(block) * 2 * d + j];
      sb += partial[static_cast<size_t>(block) * 2 * d + d + j];
    }
    if (ggain != nullptr) ggain[j] = sg;
    if (gbias != nullptr) gbias[j] = sb;
  }
}

}  // namespace fg::ops::cpu
