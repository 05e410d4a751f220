// CUDA kernels for the sparse, segment, gather and per-row ops: SpMM with per-head weights, SpMM-max
// and its gradient, SDDMM (dot and add), segment softmax, segment reductions, row gathers,
// log-softmax and L2 normalisation, and the grouping of positions by index (a radix sort). Element bodies are the FG_HD functions of ops/shared/sparse.h
// and ops/shared/rows.h; one thread per (row, column), (entry, head), (segment, head) or row, in
// grid-stride loops. Consecutive threads take consecutive columns, so feature reads coalesce.
// Every output is written by one thread in CSR entry order: results are deterministic.
#include <cub/device/device_radix_sort.cuh>

#include "flexgraph/ops/cuda/cuda_util.h"
#include "flexgraph/ops/kernels.h"
#include "flexgraph/ops/shared/rows.h"
#include "flexgraph/ops/shared/sparse.h"
#include "flexgraph/tensor/device_alloc.h"

namespace fg::ops::cuda {
namespace {

__global__ void __launch_bounds__(kThreads)
    SpmmKernel(const int64_t* __restrict__ off, const int32_t* __restrict__ col,
               const float* __restrict__ w, int64_t w_heads, const float* __restrict__ x,
               int64_t width, int mean, float* __restrict__ out, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    out[i] = shared::SpmmElement(off, col, w, w_heads, i / width, x, width, i % width, mean);
  }
}

__global__ void __launch_bounds__(kThreads)
    SpmmMaxKernel(const int64_t* __restrict__ off, const int32_t* __restrict__ col,
                  const float* __restrict__ x, int64_t width, float* __restrict__ out,
                  int32_t* __restrict__ argmax, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    out[i] = shared::SpmmMaxElement(off, col, i / width, x, width, i % width, argmax + i);
  }
}

__global__ void __launch_bounds__(kThreads)
    SpmmMaxBackwardKernel(const int64_t* __restrict__ t_off, const int32_t* __restrict__ t_col,
                          const int32_t* __restrict__ argmax, const float* __restrict__ gy,
                          int64_t width, float* __restrict__ gx, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    gx[i] = shared::SpmmMaxBackwardElement(t_off, t_col, i / width, argmax, gy, width, i % width);
  }
}

// One thread per (entry, head); the entry's row comes from a binary search over the offsets.
__global__ void __launch_bounds__(kThreads)
    SddmmDotKernel(const int64_t* __restrict__ off, const int32_t* __restrict__ col, int64_t rows,
                   const float* __restrict__ a, const float* __restrict__ b, int64_t width,
                   int64_t heads, float* __restrict__ out, int64_t n) {
  const int64_t hw = width / heads;
  FG_GRID_STRIDE(i, n) {
    const int64_t e = i / heads, h = i % heads;
    const int64_t r = shared::RowOfEntry(off, rows, e);
    out[i] = shared::DotSlice(a + r * width, b + static_cast<int64_t>(col[e]) * width, h, hw);
  }
}

__global__ void __launch_bounds__(kThreads)
    SddmmAddKernel(const int64_t* __restrict__ off, const int32_t* __restrict__ col, int64_t rows,
                   const float* __restrict__ u, const float* __restrict__ v, int64_t heads,
                   float* __restrict__ out, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t e = i / heads, h = i % heads;
    const int64_t r = shared::RowOfEntry(off, rows, e);
    out[i] = u[r * heads + h] + v[static_cast<int64_t>(col[e]) * heads + h];
  }
}

__global__ void __launch_bounds__(kThreads)
    SegmentSoftmaxKernel(const int64_t* __restrict__ off, const float* __restrict__ s,
                         int64_t heads, float* __restrict__ y, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t seg = i / heads;
    shared::SegmentSoftmaxColumn(off[seg], off[seg + 1], s, heads, i % heads, y);
  }
}

__global__ void __launch_bounds__(kThreads)
    SegmentSoftmaxBackwardKernel(const int64_t* __restrict__ off, const float* __restrict__ y,
                                 const float* __restrict__ gy, int64_t heads,
                                 float* __restrict__ gs, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t seg = i / heads;
    shared::SegmentSoftmaxBackwardColumn(off[seg], off[seg + 1], y, gy, heads, i % heads, gs);
  }
}

__global__ void __launch_bounds__(kThreads)
    SegmentReduceKernel(const int64_t* __restrict__ off, const float* __restrict__ x,
                        int64_t width, int reduce, float* __restrict__ out,
                        int32_t* __restrict__ argmax, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t seg = i / width;
    int32_t am = -1;
    out[i] = shared::SegmentReduceElement(off[seg], off[seg + 1], x, width, i % width, reduce, &am);
    if (argmax != nullptr) argmax[i] = am;
  }
}

// One thread per (segment, column): the column of every row of the segment.
__global__ void __launch_bounds__(kThreads)
    SegmentReduceBackwardKernel(const int64_t* __restrict__ off, const float* __restrict__ g,
                                const int32_t* __restrict__ argmax, int64_t width, int reduce,
                                float* __restrict__ gx, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t seg = i / width, j = i % width, lo = off[seg], hi = off[seg + 1];
    const float v = g[i];
    if (reduce == 2) {
      const int32_t arg = argmax[i];
      for (int64_t e = lo; e < hi; ++e) gx[e * width + j] = e == arg ? v : 0.0f;
    } else {
      const float f = reduce == 1 && hi > lo ? (1.0f / static_cast<float>(hi - lo)) * v : v;
      for (int64_t e = lo; e < hi; ++e) gx[e * width + j] = f;
    }
  }
}

template <typename Index>
__global__ void __launch_bounds__(kThreads)
    GatherRowsKernel(const float* __restrict__ x, Index width, const int32_t* __restrict__ idx,
                     float* __restrict__ out, Index n) {
  FG_GRID_STRIDE_AS(Index, i, n) {
    const Index k = i / width;
    out[i] = x[static_cast<int64_t>(idx[k]) * width + (i - k * width)];
  }
}

// One thread per row: rows are short here (classes, embedding widths).
__global__ void __launch_bounds__(kThreads)
    LogSoftmaxKernel(const float* __restrict__ x, int64_t rows, int64_t cols,
                     float* __restrict__ y) {
  FG_GRID_STRIDE(r, rows) { shared::LogSoftmaxRow(x + r * cols, cols, y + r * cols); }
}

__global__ void __launch_bounds__(kThreads)
    LogSoftmaxBackwardKernel(const float* __restrict__ y, const float* __restrict__ gy,
                             int64_t rows, int64_t cols, float* __restrict__ gx) {
  FG_GRID_STRIDE(r, rows) {
    shared::LogSoftmaxRowBackward(y + r * cols, gy + r * cols, cols, gx + r * cols);
  }
}

__global__ void __launch_bounds__(kThreads)
    RowL2NormalizeKernel(const float* __restrict__ x, int64_t rows, int64_t cols, float eps,
                         float* __restrict__ y, float* __restrict__ norms) {
  FG_GRID_STRIDE(r, rows) { norms[r] = shared::RowL2NormalizeRow(x + r * cols, cols, eps, y + r * cols); }
}

__global__ void __launch_bounds__(kThreads)
    RowL2NormalizeBackwardKernel(const float* __restrict__ y, const float* __restrict__ norms,
                                 const float* __restrict__ gy, int64_t rows, int64_t cols,
                                 float eps, float* __restrict__ gx) {
  FG_GRID_STRIDE(r, rows) {
    shared::RowL2NormalizeRowBackward(y + r * cols, norms[r], gy + r * cols, cols, eps,
                                      gx + r * cols);
  }
}

// Sort keys for GroupByIndex: the index, or num_rows (sorted last, in no group) outside the rows.
__global__ void __launch_bounds__(kThreads)
    GroupKeysKernel(const int32_t* __restrict__ idx, int64_t n, int64_t num_rows,
                    uint32_t* __restrict__ keys, int32_t* __restrict__ positions) {
  FG_GRID_STRIDE(k, n) {
    const int32_t v = idx[k];
    keys[k] = v >= 0 && v < num_rows ? static_cast<uint32_t>(v) : static_cast<uint32_t>(num_rows);
    positions[k] = static_cast<int32_t>(k);
  }
}

// off[r] = the first sorted position whose key is at least r.
__global__ void __launch_bounds__(kThreads)
    GroupOffsetsKernel(const uint32_t* __restrict__ sorted, int64_t n, int64_t num_rows,
                       int64_t* __restrict__ off) {
  FG_GRID_STRIDE(r, num_rows + 1) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (static_cast<int64_t>(sorted[mid]) < r) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    off[r] = lo;
  }
}

}  // namespace

void GroupByIndex(const int32_t* idx, int64_t n, int64_t num_rows, int64_t* off, int32_t* pos) {
  const cudaStream_t stream = CurrentStream();
  if (n == 0) {
    FG_CUDA_CHECK(cudaMemsetAsync(off, 0, sizeof(int64_t) * (num_rows + 1), stream));
    return;
  }
  int end_bit = 1;  // keys lie in [0, num_rows]
  while (end_bit < 32 && (uint64_t{1} << end_bit) <= static_cast<uint64_t>(num_rows)) ++end_bit;
  // Scratch from the stream-ordered caching allocator: freed blocks are reused on this stream only.
  auto* keys = static_cast<uint32_t*>(DeviceAlloc(2 * sizeof(uint32_t) * n));
  auto* positions = static_cast<int32_t*>(DeviceAlloc(sizeof(int32_t) * n));
  GroupKeysKernel<<<BlocksFor(n), kThreads, 0, stream>>>(idx, n, num_rows, keys, positions);
  FG_CUDA_CHECK_LAUNCH();
  size_t temp_bytes = 0;
  FG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, keys + n, positions, pos,
                                                n, 0, end_bit, stream));
  void* temp = DeviceAlloc(temp_bytes);
  FG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys + n, positions, pos, n,
                                                0, end_bit, stream));
  GroupOffsetsKernel<<<BlocksFor(num_rows + 1), kThreads, 0, stream>>>(keys + n, n, num_rows, off);
  FG_CUDA_CHECK_LAUNCH();
  DeviceFree(temp, temp_bytes);
  DeviceFree(positions, sizeof(int32_t) * n);
  DeviceFree(keys, 2 * sizeof(uint32_t) * n);
}

void LaunchSpmmElementwise(const int64_t* off, const int32_t* col, const float* w, int64_t w_heads,
                           int64_t rows, const float* x, int64_t width, int mean, float* out) {
  const int64_t n = rows * width;
  if (n == 0) return;
  SpmmKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(off, col, w, w_heads, x, width, mean,
                                                              out, n);
  FG_CUDA_CHECK_LAUNCH();
}

void SpmmMax(const int64_t* off, const int32_t* col, int64_t rows, const float* x, int64_t width,
             float* out, int32_t* argmax) {
  const int64_t n = rows * width;
  if (n == 0) return;
  SpmmMaxKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(off, col, x, width, out, argmax, n);
  FG_CUDA_CHECK_LAUNCH();
}

void SpmmMaxBackward(const int64_t* t_off, const int32_t* t_col, int64_t x_rows,
                     const int32_t* argmax, const float* gy, int64_t width, float* gx) {
  const int64_t n = x_rows * width;
  if (n == 0) return;
  SpmmMaxBackwardKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(t_off, t_col, argmax, gy,
                                                                         width, gx, n);
  FG_CUDA_CHECK_LAUNCH();
}

void SddmmDot(const int64_t* off, const int32_t* col, int64_t rows, int64_t nnz, const float* a,
              const float* b, int64_t width, int64_t heads, float* out) {
  if (rows == 0) return;
  const int64_t n = nnz * heads;
  if (n == 0) return;
  SddmmDotKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(off, col, rows, a, b, width,
                                                                  heads, out, n);
  FG_CUDA_CHECK_LAUNCH();
}

void SddmmAdd(const int64_t* off, const int32_t* col, int64_t rows, int64_t nnz, const float* u,
              const float* v, int64_t heads, float* out) {
  if (rows == 0) return;
  const int64_t n = nnz * heads;
  if (n == 0) return;
  SddmmAddKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(off, col, rows, u, v, heads, out,
                                                                  n);
  FG_CUDA_CHECK_LAUNCH();
}

void SegmentSoftmax(const int64_t* off, int64_t rows, const float* s, int64_t heads, float* y) {
  const int64_t n = rows * heads;
  if (n == 0) return;
  SegmentSoftmaxKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(off, s, heads, y, n);
  FG_CUDA_CHECK_LAUNCH();
}

void SegmentSoftmaxBackward(const int64_t* off, int64_t rows, const float* y, const float* gy,
                            int64_t heads, float* gs) {
  const int64_t n = rows * heads;
  if (n == 0) return;
  SegmentSoftmaxBackwardKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(off, y, gy, heads,
                                                                                gs, n);
  FG_CUDA_CHECK_LAUNCH();
}

void SegmentReduce(const int64_t* off, int64_t rows, const float* x, int64_t width, int reduce,
                   float* out, int32_t* argmax) {
  const int64_t n = rows * width;
  if (n == 0) return;
  SegmentReduceKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
      off, x, width, reduce, out, reduce == 2 ? argmax : nullptr, n);
  FG_CUDA_CHECK_LAUNCH();
}

void SegmentReduceBackward(const int64_t* off, int64_t segs, const float* g, const int32_t* argmax,
                           int64_t width, int reduce, float* gx) {
  const int64_t n = segs * width;
  if (n == 0) return;
  SegmentReduceBackwardKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
      off, g, reduce == 2 ? argmax : nullptr, width, reduce, gx, n);
  FG_CUDA_CHECK_LAUNCH();
}

void GatherRows(const float* x, int64_t width, const int32_t* idx, int64_t n, float* out) {
  const int64_t total = n * width;
  if (total == 0) return;
  if (total < kIndex32Limit) {
    GatherRowsKernel<uint32_t><<<BlocksFor(total), kThreads, 0, CurrentStream()>>>(
        x, static_cast<uint32_t>(width), idx, out, static_cast<uint32_t>(total));
  } else {
    GatherRowsKernel<int64_t>
        <<<BlocksFor(total), kThreads, 0, CurrentStream()>>>(x, width, idx, out, total);
  }
  FG_CUDA_CHECK_LAUNCH();
}

void LogSoftmaxRows(const float* x, int64_t rows, int64_t cols, float* y) {
  if (rows == 0) return;
  LogSoftmaxKernel<<<BlocksFor(rows), kThreads, 0, CurrentStream()>>>(x, rows, cols, y);
  FG_CUDA_CHECK_LAUNCH();
}

void LogSoftmaxRowsBackward(const float* y, const float* gy, int64_t rows, int64_t cols,
                            float* gx) {
  if (rows == 0) return;
  LogSoftmaxBackwardKernel<<<BlocksFor(rows), kThreads, 0, CurrentStream()>>>(y, gy, rows, cols,
                                                                               gx);
  FG_CUDA_CHECK_LAUNCH();
}

void RowL2Normalize(const float* x, int64_t rows, int64_t cols, float eps, float* y,
                    float* norms) {
  if (rows == 0) return;
  RowL2NormalizeKernel<<<BlocksFor(rows), kThreads, 0, CurrentStream()>>>(x, rows, cols, eps, y,
                                                                           norms);
  FG_CUDA_CHECK_LAUNCH();
}

void RowL2NormalizeBackward(const float* y, const float* norms, const float* gy, int64_t rows,
                            int64_t cols, float eps, float* gx) {
  if (rows == 0) return;
  RowL2NormalizeBackwardKernel<<<BlocksFor(rows), kThreads, 0, CurrentStream()>>>(
      y, norms, gy, rows, cols, eps, gx);
  FG_CUDA_CHECK_LAUNCH();
}

}  // namespace fg::ops::cuda
