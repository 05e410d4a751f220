// CUDA kernels of the edge ops (ops/edge_ops.h), twins of ops/cpu/edge.cc: one thread per output
// element in grid-stride loops, consecutive threads on consecutive columns; sums run over the
// entries in the order the CPU kernels use (double accumulators for the standard deviation, as
// there), never with atomics.
#include <cstdint>

#include "flexgraph/ops/cuda/cuda_util.h"
#include "flexgraph/ops/edge_kernels.h"
#include "flexgraph/ops/shared/sparse.h"

namespace fg::ops::cuda {
namespace {

__global__ void __launch_bounds__(kThreads)
    EdgeInputKernel(const int64_t* __restrict__ off, const int32_t* __restrict__ col, int64_t rows,
                    const float* __restrict__ xs, int64_t ds, const float* __restrict__ xd, int64_t dd,
                    const float* __restrict__ e, int64_t de, float* __restrict__ out, int64_t n) {
  const int64_t w = ds + dd + de;
  FG_GRID_STRIDE(i, n) {
    const int64_t k = i / w, j = i % w;
    float v;
    if (j < ds) {
      v = xs[static_cast<int64_t>(col[k]) * ds + j];
    } else if (j < ds + dd) {
      v = xd[shared::RowOfEntry(off, rows, k) * dd + (j - ds)];
    } else {
      v = e[k * de + (j - ds - dd)];
    }
    out[i] = v;
  }
}

// gxs[c, j]: column c's transposed entries in order.
__global__ void __launch_bounds__(kThreads)
    GradSourcesKernel(const int64_t* __restrict__ t_off, const int32_t* __restrict__ perm,
                      const float* __restrict__ g, int64_t w, int64_t ds, float* __restrict__ gxs,
                      int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t c = i / ds, j = i % ds;
    float s = 0.0f;
    for (int64_t t = t_off[c]; t < t_off[c + 1]; ++t) s += g[static_cast<int64_t>(perm[t]) * w + j];
    gxs[i] = s;
  }
}

// gxd[r, j]: row r's entries in order.
__global__ void __launch_bounds__(kThreads)
    GradDestinationsKernel(const int64_t* __restrict__ off, const float* __restrict__ g, int64_t w,
                           int64_t ds, int64_t dd, float* __restrict__ gxd, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t r = i / dd, j = i % dd;
    float s = 0.0f;
    for (int64_t k = off[r]; k < off[r + 1]; ++k) s += g[k * w + ds + j];
    gxd[i] = s;
  }
}

__global__ void __launch_bounds__(kThreads)
    GradEdgesKernel(const float* __restrict__ g, int64_t w, int64_t first, int64_t de,
                    float* __restrict__ ge, int64_t n) {
  FG_GRID_STRIDE(i, n) { ge[i] = g[(i / de) * w + first + i % de]; }
}

__global__ void __launch_bounds__(kThreads)
    SegmentStdKernel(const int64_t* __restrict__ off, const float* __restrict__ x, int64_t d, float eps,
                     float* __restrict__ y, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t s = i / d, j = i % d;
    const int64_t count = off[s + 1] - off[s];
    double sum = 0, sq = 0;
    for (int64_t k = off[s]; k < off[s + 1]; ++k) {
      const double v = x[k * d + j];
      sum += v;
      sq += v * v;
    }
    double var = 0;
    if (count > 0) {
      const double mean = sum / count;
      var = sq / count - mean * mean;
      if (var < 0) var = 0;
    }
    y[i] = static_cast<float>(sqrt(var + eps));
  }
}

__global__ void __launch_bounds__(kThreads)
    SegmentStdBackwardKernel(const int64_t* __restrict__ off, const float* __restrict__ x,
                             const float* __restrict__ y, const float* __restrict__ g, int64_t d,
                             float* __restrict__ gx, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t s = i / d, j = i % d;
    const int64_t count = off[s + 1] - off[s];
    if (count == 0) continue;
    double sum = 0;
    for (int64_t k = off[s]; k < off[s + 1]; ++k) sum += x[k * d + j];
    const double mean = sum / count;
    const double scale = g[i] / (count * static_cast<double>(y[i]));
    for (int64_t k = off[s]; k < off[s + 1]; ++k) gx[k * d + j] = static_cast<float>((x[k * d + j] - mean) * scale);
  }
}

}  // namespace

void EdgeInput(const int64_t* off, const int32_t* col, int64_t rows, int64_t nnz, const float* xs,
               int64_t ds, const float* xd, int64_t dd, const float* e, int64_t de, float* out) {
  const int64_t n = nnz * (ds + dd + de);
  if (n == 0) return;
  EdgeInputKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(off, col, rows, xs, ds, xd, dd, e, de, out, n);
  FG_CUDA_CHECK_LAUNCH();
}

void EdgeInputBackward(const int64_t* off, int64_t rows, int64_t nnz, const int64_t* t_off, const int32_t* perm,
                       int64_t cols, const float* g, int64_t ds, int64_t dd, int64_t de, float* gxs,
                       float* gxd, float* ge) {
  const int64_t w = ds + dd + de;
  if (gxs != nullptr && cols * ds > 0) {
    GradSourcesKernel<<<BlocksFor(cols * ds), kThreads, 0, CurrentStream()>>>(t_off, perm, g, w, ds, gxs,
                                                                               cols * ds);
    FG_CUDA_CHECK_LAUNCH();
  }
  if (gxd != nullptr && rows * dd > 0) {
    GradDestinationsKernel<<<BlocksFor(rows * dd), kThreads, 0, CurrentStream()>>>(off, g, w, ds, dd, gxd,
                                                                                    rows * dd);
    FG_CUDA_CHECK_LAUNCH();
  }
  if (ge != nullptr && nnz * de > 0) {
    GradEdgesKernel<<<BlocksFor(nnz * de), kThreads, 0, CurrentStream()>>>(g, w, ds + dd, de, ge, nnz * de);
    FG_CUDA_CHECK_LAUNCH();
  }
}

void SegmentStd(const int64_t* off, int64_t segs, const float* x, int64_t d, float eps, float* y) {
  if (segs * d == 0) return;
  SegmentStdKernel<<<BlocksFor(segs * d), kThreads, 0, CurrentStream()>>>(off, x, d, eps, y, segs * d);
  FG_CUDA_CHECK_LAUNCH();
}

void SegmentStdBackward(const int64_t* off, int64_t segs, const float* x, const float* y, const float* g,
                        int64_t d, float* gx) {
  if (segs * d == 0) return;
  SegmentStdBackwardKernel<<<BlocksFor(segs * d), kThreads, 0, CurrentStream()>>>(off, x, y, g, d, gx,
                                                                                   segs * d);
  FG_CUDA_CHECK_LAUNCH();
}

}  // namespace fg::ops::cuda
