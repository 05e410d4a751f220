// CPU kernels of the edge ops (ops/edge_ops.h): one parallel pass over rows (destinations) or
// transposed rows (sources), each output row written by one thread, so results never depend on
// the thread count.
#include <cmath>
#include <cstring>

#include "flexgraph/base/parallel.h"
#include "flexgraph/ops/edge_kernels.h"

namespace fg::ops::cpu {

void EdgeInput(const int64_t* off, const int32_t* col, int64_t rows, int64_t /*nnz*/, const float* xs,
               int64_t ds, const float* xd, int64_t dd, const float* e, int64_t de, float* out) {
  const int64_t w = ds + dd + de;
  ParallelForDynamic(0, rows, 64, [&](int64_t r) {
    for (int64_t k = off[r]; k < off[r + 1]; ++k) {
      float* o = out + k * w;
      std::memcpy(o, xs + static_cast<int64_t>(col[k]) * ds, ds * sizeof(float));
      std::memcpy(o + ds, xd + r * dd, dd * sizeof(float));
      if (de > 0) std::memcpy(o + ds + dd, e + k * de, de * sizeof(float));
    }
  });
}

void EdgeInputBackward(const int64_t* off, int64_t rows, int64_t /*nnz*/, const int64_t* t_off, const int32_t* perm,
                       int64_t cols, const float* g, int64_t ds, int64_t dd, int64_t de,
                       float* gxs, float* gxd, float* ge) {
  const int64_t w = ds + dd + de;
  if (gxs != nullptr) {
    ParallelForDynamic(0, cols, 64, [&](int64_t c) {
      float* o = gxs + c * ds;
      std::memset(o, 0, ds * sizeof(float));
      for (int64_t t = t_off[c]; t < t_off[c + 1]; ++t) {
        const float* src = g + static_cast<int64_t>(perm[t]) * w;
        for (int64_t j = 0; j < ds; ++j) o[j] += src[j];
      }
    });
  }
  if (gxd != nullptr || ge != nullptr) {
    ParallelForDynamic(0, rows, 64, [&](int64_t r) {
      if (gxd != nullptr) {
        float* o = gxd + r * dd;
        std::memset(o, 0, dd * sizeof(float));
        for (int64_t k = off[r]; k < off[r + 1]; ++k) {
          const float* src = g + k * w + ds;
          for (int64_t j = 0; j < dd; ++j) o[j] += src[j];
        }
      }
      if (ge != nullptr) {
        for (int64_t k = off[r]; k < off[r + 1]; ++k) {
          std::memcpy(ge + k * de, g + k * w + ds + dd, de * sizeof(float));
        }
      }
    });
  }
}

void SegmentStd(const int64_t* off, int64_t segs, const float* x, int64_t d, float eps, float* y) {
  ParallelForDynamic(0, segs, 64, [&](int64_t s) {
    const int64_t n = off[s + 1] - off[s];
    float* o = y + s * d;
    for (int64_t j = 0; j < d; ++j) {
      double sum = 0, sq = 0;
      for (int64_t k = off[s]; k < off[s + 1]; ++k) {
        const double v = x[k * d + j];
        sum += v;
        sq += v * v;
      }
      double var = 0;
      if (n > 0) {
        const double mean = sum / n;
        var = std::max(0.0, sq / n - mean * mean);
      }
      o[j] = static_cast<float>(std::sqrt(var + eps));
    }
  });
}

void SegmentStdBackward(const int64_t* off, int64_t segs, const float* x, const float* y,
                        const float* g, int64_t d, float* gx) {
  ParallelForDynamic(0, segs, 64, [&](int64_t s) {
    const int64_t n = off[s + 1] - off[s];
    if (n == 0) return;
    for (int64_t j = 0; j < d; ++j) {
      double sum = 0;
      for (int64_t k = off[s]; k < off[s + 1]; ++k) sum += x[k * d + j];
      const double mean = sum / n;
      const double scale = g[s * d + j] / (n * static_cast<double>(y[s * d + j]));
      for (int64_t k = off[s]; k < off[s + 1]; ++k) {
        gx[k * d + j] = static_cast<float>((x[k * d + j] - mean) * scale);
      }
    }
  });
}

}  // namespace fg::ops::cpu
