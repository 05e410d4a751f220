// CUDA kernels for the elementwise and dense row ops: activations and their gradients, scaled adds,
// products, per-row scaling, column sums, dropout masks (Philox, seeded), column-block copies
// (Concat/Split), and small helpers of the library-backed entry points. One thread per output
// element in grid-stride loops; the element bodies are the FG_HD functions of
// ops/shared/elementwise.h that the CPU backend runs too.
#include "flexgraph/ops/cuda/cuda_util.h"
#include "flexgraph/ops/kernels.h"
#include "flexgraph/ops/shared/elementwise.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::ops::cuda {
namespace {

template <UnaryOp Op>
__global__ void __launch_bounds__(kThreads)
    UnaryKernel(float alpha, const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  FG_GRID_STRIDE(i, n) { y[i] = shared::UnaryValue<Op>(x[i], alpha); }
}

template <UnaryOp Op>
__global__ void __launch_bounds__(kThreads)
    UnaryGradKernel(float alpha, const float* __restrict__ x, const float* __restrict__ y,
                    const float* __restrict__ gy, float* __restrict__ gx, int64_t n) {
  FG_GRID_STRIDE(i, n) { gx[i] = shared::UnaryGrad<Op>(x[i], y[i], gy[i], alpha); }
}

// a, b and y may alias (AddInPlace, x += x): no __restrict__.
template <typename Index>
__global__ void __launch_bounds__(kThreads)
    AddScaledKernel(const float* a, const float* b, float alpha, float* y, Index n,
                    Index b_period) {
  FG_GRID_STRIDE_AS(Index, i, n) { y[i] = shared::AddScaledValue(a, b, alpha, i, b_period); }
}

template <typename Index>
__global__ void __launch_bounds__(kThreads)
    BiasReluKernel(const float* x, const float* b, Index cols, float* y, Index n) {
  FG_GRID_STRIDE_AS(Index, i, n) {
    y[i] = shared::UnaryValue<UnaryOp::kRelu>(x[i] + b[i % cols], 0.0f);
  }
}

__global__ void __launch_bounds__(kThreads)
    MulKernel(const float* a, const float* b, float* y, int64_t n) {
  FG_GRID_STRIDE(i, n) { y[i] = a[i] * b[i]; }
}

__global__ void __launch_bounds__(kThreads) ScaleKernel(const float* x, float s, float* y, int64_t n) {
  FG_GRID_STRIDE(i, n) { y[i] = s * x[i]; }
}

template <typename Index>
__global__ void __launch_bounds__(kThreads)
    ScaleRowsKernel(const float* __restrict__ x, const float* __restrict__ s, Index width,
                    Index heads, float* __restrict__ y, Index n) {
  FG_GRID_STRIDE_AS(Index, i, n) { y[i] = shared::ScaleRowsValue(x, s, width, heads, i); }
}

// Column sums in two deterministic passes: partial[c, j] sums rows of chunk c in order, then each
// column adds its partials in chunk order.
constexpr int64_t kSumChunkRows = 512;

__global__ void __launch_bounds__(kThreads)
    SumRowsPartialKernel(const float* __restrict__ x, int64_t rows, int64_t cols,
                         float* __restrict__ partial, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t c = i / cols, j = i % cols;
    const int64_t lo = c * kSumChunkRows;
    const int64_t count = rows - lo < kSumChunkRows ? rows - lo : kSumChunkRows;
    partial[i] = shared::SumColumn(x + lo * cols, count, cols, j);
  }
}

__global__ void __launch_bounds__(kThreads)
    SumRowsKernel(const float* __restrict__ x, int64_t rows, int64_t cols, float* __restrict__ y) {
  FG_GRID_STRIDE(j, cols) { y[j] = shared::SumColumn(x, rows, cols, j); }
}

// A warp per (row, group of 256 columns): each lane draws one Philox block, then the warp writes
// the group's columns contiguously, each lane taking its column's keep bit from the block's owner
// (ops/shared/elementwise.h, DropoutKeepBits). Warps loop uniformly, so the shuffles are full-warp.
__global__ void __launch_bounds__(kThreads)
    DropoutKernel(uint64_t seed, const int64_t* __restrict__ row_ids, int64_t rows, int64_t cols,
                  uint32_t threshold, float keep_scale, const float* __restrict__ x,
                  float* __restrict__ y) {
  const int lane = threadIdx.x & 31;
  const int64_t groups = (cols + shared::kDropoutGroupCols - 1) / shared::kDropoutGroupCols;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t w = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       w < rows * groups; w += warps) {
    const int64_t r = w / groups, g = w - r * groups;
    const uint64_t id = row_ids ? static_cast<uint64_t>(row_ids[r]) : static_cast<uint64_t>(r);
    const int64_t block = g * 32 + lane;
    const uint32_t bits = block * shared::kDropoutBlockCols < cols
                              ? shared::DropoutKeepBits(seed, id, block, threshold)
                              : 0u;
    const float* x_row = x != nullptr ? x + r * cols : nullptr;
    float* y_row = y + r * cols;
#pragma unroll
    for (int k = 0; k < shared::kDropoutBlockCols; ++k) {
      const uint32_t owner_bits =
          __shfl_sync(0xFFFFFFFFu, bits, shared::DropoutRoundOwner(k, lane));
      const int64_t c = shared::DropoutRoundColumn(g, k, lane);
      if (c < cols) y_row[c] = shared::DropoutRoundValue(owner_bits, lane, keep_scale, x_row, c);
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    CopyColumnsKernel(const float* __restrict__ x, int64_t x_width, int64_t x_at, int64_t width,
                      float* __restrict__ y, int64_t y_width, int64_t y_at, int64_t n) {
  FG_GRID_STRIDE(i, n) { shared::CopyColumnsElement(x, x_width, x_at, y, y_width, y_at, width, i); }
}

__global__ void __launch_bounds__(kThreads)
    OffsetsToInt32Kernel(const int64_t* __restrict__ off, int64_t n, int32_t* __restrict__ out) {
  FG_GRID_STRIDE(i, n) { out[i] = static_cast<int32_t>(off[i]); }
}

__global__ void __launch_bounds__(kThreads) FillKernel(float* p, float value, int64_t n) {
  FG_GRID_STRIDE(i, n) { p[i] = value; }
}

template <typename Index>
__global__ void __launch_bounds__(kThreads)
    ScaleByInverseDegreeKernel(const int64_t* __restrict__ off, Index width, float* out, Index n) {
  FG_GRID_STRIDE_AS(Index, i, n) {
    const Index r = i / width;
    const int64_t deg = off[r + 1] - off[r];
    if (deg > 0) out[i] *= 1.0f / static_cast<float>(deg);
  }
}

// A warp per row writes 1 / degree into the row's entries (coalesced, long rows looped).
__global__ void __launch_bounds__(kThreads)
    InverseDegreeValuesKernel(const int64_t* __restrict__ off, int64_t rows, float* __restrict__ w) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kThreads / 32);
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / 32; r < rows;
       r += warps) {
    const int64_t lo = off[r], hi = off[r + 1];
    const float inv = 1.0f / static_cast<float>(hi - lo);
    for (int64_t e = lo + lane; e < hi; e += 32) w[e] = inv;
  }
}

__global__ void __launch_bounds__(kThreads)
    OptimizerStepKernel(OptimizerStepArgs o, float* __restrict__ w, const float* __restrict__ g,
                        float* __restrict__ m, float* __restrict__ v, int64_t n) {
  FG_GRID_STRIDE(i, n) { shared::OptimizerUpdate(o, w, g, m, v, i); }
}

// The loss sums in two fixed-order levels: block b sums items [b kNllChunk, (b + 1) kNllChunk)
// (each thread a strided range, then a tree) into partial[b]; one block then sums the partials the
// same way. Deterministic, and no thread loops over more than kNllChunk / kNllThreads items.
constexpr int kNllThreads = 512;
constexpr int64_t kNllChunk = 8192;

__device__ double BlockSum(double s) {
  __shared__ double partial[kNllThreads];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int half = kNllThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  return partial[0];
}

__global__ void __launch_bounds__(kNllThreads)
    NllLossPartialKernel(const float* __restrict__ lp, int64_t classes,
                         const int64_t* __restrict__ labels, const int32_t* __restrict__ rows,
                         int64_t m, double* __restrict__ partial) {
  const int64_t lo = blockIdx.x * kNllChunk, hi = lo + kNllChunk < m ? lo + kNllChunk : m;
  double s = 0.0;
  for (int64_t k = lo + threadIdx.x; k < hi; k += kNllThreads)
    s -= lp[rows[k] * classes + labels[rows[k]]];
  const double total = BlockSum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

// out[0] = (sum of the partials) / m.
__global__ void __launch_bounds__(kNllThreads)
    MeanOfPartialsKernel(const double* __restrict__ partial, int64_t blocks, int64_t m,
                         float* __restrict__ out) {
  double s = 0.0;
  for (int64_t b = threadIdx.x; b < blocks; b += kNllThreads) s += partial[b];
  const double total = BlockSum(s);
  if (threadIdx.x == 0) out[0] = static_cast<float>(total / static_cast<double>(m));
}

__global__ void __launch_bounds__(kNllThreads)
    BcePartialKernel(const float* __restrict__ x, const float* __restrict__ t, int64_t n,
                     double* __restrict__ partial) {
  const int64_t lo = blockIdx.x * kNllChunk, hi = lo + kNllChunk < n ? lo + kNllChunk : n;
  double s = 0.0;
  for (int64_t i = lo + threadIdx.x; i < hi; i += kNllThreads) s += shared::BceTerm(x[i], t[i]);
  const double total = BlockSum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void __launch_bounds__(kThreads)
    BceBackwardKernel(const float* __restrict__ g, const float* __restrict__ x,
                      const float* __restrict__ t, int64_t n, float* __restrict__ gx) {
  const float scale = g[0] / static_cast<float>(n);
  FG_GRID_STRIDE(i, n) { gx[i] = scale * shared::BceGrad(x[i], t[i]); }
}

__global__ void __launch_bounds__(kThreads)
    NllLossBackwardKernel(const float* __restrict__ g, int64_t classes,
                          const int64_t* __restrict__ labels, const int32_t* __restrict__ rows,
                          int64_t m, float* __restrict__ gl) {
  const float scale = -g[0] / static_cast<float>(m);
  FG_GRID_STRIDE(k, m) { gl[rows[k] * classes + labels[rows[k]]] += scale; }
}

}  // namespace

void Unary(UnaryOp op, float alpha, const float* x, float* y, int64_t n) {
  if (n == 0) return;
  shared::DispatchUnaryOp(op, [&]<UnaryOp Op>() {
    UnaryKernel<Op><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(alpha, x, y, n);
  });
  FG_CUDA_CHECK_LAUNCH();
}

void UnaryBackward(UnaryOp op, float alpha, const float* x, const float* y, const float* gy,
                   float* gx, int64_t n) {
  if (n == 0) return;
  shared::DispatchUnaryOp(op, [&]<UnaryOp Op>() {
    UnaryGradKernel<Op><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(alpha, x, y, gy, gx, n);
  });
  FG_CUDA_CHECK_LAUNCH();
}

void AddScaled(const float* a, const float* b, float alpha, float* y, int64_t n,
               int64_t b_period) {
  if (n == 0) return;
  if (n < kIndex32Limit) {
    AddScaledKernel<uint32_t><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
        a, b, alpha, y, static_cast<uint32_t>(n), static_cast<uint32_t>(b_period));
  } else {
    AddScaledKernel<int64_t><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(a, b, alpha, y, n,
                                                                              b_period);
  }
  FG_CUDA_CHECK_LAUNCH();
}

void BiasRelu(const float* x, const float* b, int64_t rows, int64_t cols, float* y) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  if (n < kIndex32Limit) {
    BiasReluKernel<uint32_t><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
        x, b, static_cast<uint32_t>(cols), y, static_cast<uint32_t>(n));
  } else {
    BiasReluKernel<int64_t><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(x, b, cols, y, n);
  }
  FG_CUDA_CHECK_LAUNCH();
}

void BiasReluBackward(const float* y, const float* gy, int64_t rows, int64_t cols, float* gx,
                      float* gb) {
  UnaryBackward(UnaryOp::kRelu, 0.0f, y, y, gy, gx, rows * cols);
  SumRows(gx, rows, cols, gb);
}

void MulElem(const float* a, const float* b, float* y, int64_t n) {
  if (n == 0) return;
  MulKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(a, b, y, n);
  FG_CUDA_CHECK_LAUNCH();
}

void Scale(const float* x, float s, float* y, int64_t n) {
  if (n == 0) return;
  ScaleKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(x, s, y, n);
  FG_CUDA_CHECK_LAUNCH();
}

void ScaleRows(const float* x, const float* s, int64_t rows, int64_t width, int64_t heads,
               float* y) {
  const int64_t n = rows * width;
  if (n == 0) return;
  if (n < kIndex32Limit) {
    ScaleRowsKernel<uint32_t><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
        x, s, static_cast<uint32_t>(width), static_cast<uint32_t>(heads), y,
        static_cast<uint32_t>(n));
  } else {
    ScaleRowsKernel<int64_t>
        <<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(x, s, width, heads, y, n);
  }
  FG_CUDA_CHECK_LAUNCH();
}

void SumRows(const float* x, int64_t rows, int64_t cols, float* y) {
  if (cols == 0) return;
  // Partial sums over chunks of kSumChunkRows rows, level by level until one chunk is left: every
  // level runs chunks * cols threads and no thread sums more than kSumChunkRows rows (a column per
  // thread over millions of rows would wait on one load after another).
  Tensor partial;
  while (rows > kSumChunkRows) {
    const int64_t chunks = (rows + kSumChunkRows - 1) / kSumChunkRows;
    Tensor next = Tensor::Empty({chunks, cols}, DType::kFloat32, Device::kCuda);
    SumRowsPartialKernel<<<BlocksFor(chunks * cols), kThreads, 0, CurrentStream()>>>(
        x, rows, cols, next.f32(), chunks * cols);
    FG_CUDA_CHECK_LAUNCH();
    partial = next;  // the previous level's buffer is reused only after this launch (one stream)
    x = partial.f32();
    rows = chunks;
  }
  SumRowsKernel<<<BlocksFor(cols), kThreads, 0, CurrentStream()>>>(x, rows, cols, y);
  FG_CUDA_CHECK_LAUNCH();
}

void Dropout(uint64_t seed, const int64_t* row_ids, int64_t rows, int64_t cols, float p,
             const float* x, float* y) {
  const int64_t groups = (cols + shared::kDropoutGroupCols - 1) / shared::kDropoutGroupCols;
  if (rows == 0 || cols == 0) return;
  DropoutKernel<<<BlocksFor(rows * groups * 32), kThreads, 0, CurrentStream()>>>(
      seed, row_ids, rows, cols, shared::DropoutThreshold(p), 1.0f / (1.0f - p), x, y);
  FG_CUDA_CHECK_LAUNCH();
}

void CopyColumns(const float* x, int64_t x_width, int64_t x_at, int64_t rows, int64_t width,
                 float* y, int64_t y_width, int64_t y_at) {
  const int64_t n = rows * width;
  if (n == 0) return;
  CopyColumnsKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(x, x_width, x_at, width, y,
                                                                     y_width, y_at, n);
  FG_CUDA_CHECK_LAUNCH();
}

void LaunchOffsetsToInt32(const int64_t* off, int64_t n, int32_t* out) {
  if (n == 0) return;
  OffsetsToInt32Kernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(off, n, out);
  FG_CUDA_CHECK_LAUNCH();
}

void LaunchFill(float* p, float value, int64_t n) {
  if (n == 0) return;
  FillKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(p, value, n);
  FG_CUDA_CHECK_LAUNCH();
}

void LaunchScaleByInverseDegree(const int64_t* off, int64_t rows, int64_t width, float* out) {
  const int64_t n = rows * width;
  if (n == 0) return;
  if (n < kIndex32Limit) {
    ScaleByInverseDegreeKernel<uint32_t><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
        off, static_cast<uint32_t>(width), out, static_cast<uint32_t>(n));
  } else {
    ScaleByInverseDegreeKernel<int64_t><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(off, width,
                                                                                         out, n);
  }
  FG_CUDA_CHECK_LAUNCH();
}

void LaunchInverseDegreeValues(const int64_t* off, int64_t rows, float* w) {
  if (rows == 0) return;
  InverseDegreeValuesKernel<<<BlocksFor(rows * 32), kThreads, 0, CurrentStream()>>>(off, rows, w);
  FG_CUDA_CHECK_LAUNCH();
}

void OptimizerStep(const OptimizerStepArgs& o, float* w, const float* g, float* m, float* v,
                   int64_t n) {
  if (n == 0) return;
  OptimizerStepKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(o, w, g, m, v, n);
  FG_CUDA_CHECK_LAUNCH();
}

void NllLoss(const float* lp, int64_t classes, const int64_t* labels, const int32_t* rows,
             int64_t m, float* out) {
  const int64_t blocks = (m + kNllChunk - 1) / kNllChunk;
  Tensor partial = Tensor::Empty({2 * blocks}, DType::kFloat32, Device::kCuda);  // doubles
  auto* p = reinterpret_cast<double*>(partial.f32());
  NllLossPartialKernel<<<blocks, kNllThreads, 0, CurrentStream()>>>(lp, classes, labels, rows, m,
                                                                    p);
  FG_CUDA_CHECK_LAUNCH();
  MeanOfPartialsKernel<<<1, kNllThreads, 0, CurrentStream()>>>(p, blocks, m, out);
  FG_CUDA_CHECK_LAUNCH();
}

void NllLossBackward(const float* g, int64_t classes, const int64_t* labels, const int32_t* rows,
                     int64_t m, float* gl) {
  if (m == 0) return;
  NllLossBackwardKernel<<<BlocksFor(m), kThreads, 0, CurrentStream()>>>(g, classes, labels, rows, m,
                                                                         gl);
  FG_CUDA_CHECK_LAUNCH();
}

void BceWithLogits(const float* x, const float* t, int64_t n, float* out) {
  const int64_t blocks = (n + kNllChunk - 1) / kNllChunk;
  Tensor partial = Tensor::Empty({2 * blocks}, DType::kFloat32, Device::kCuda);  // doubles
  auto* p = reinterpret_cast<double*>(partial.f32());
  BcePartialKernel<<<blocks, kNllThreads, 0, CurrentStream()>>>(x, t, n, p);
  FG_CUDA_CHECK_LAUNCH();
  MeanOfPartialsKernel<<<1, kNllThreads, 0, CurrentStream()>>>(p, blocks, n, out);
  FG_CUDA_CHECK_LAUNCH();
}

void BceWithLogitsBackward(const float* g, const float* x, const float* t, int64_t n, float* gx) {
  if (n == 0) return;
  BceBackwardKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(g, x, t, n, gx);
  FG_CUDA_CHECK_LAUNCH();
}

}  // namespace fg::ops::cuda
