// CUDA kernels of the normalisation ops (ops/norm_ops.h), twins of ops/cpu/norm.cc: a warp per row,
// its lanes on strided columns and the row's sums reduced by shuffles in a fixed order; the
// parameter gradients are column sums (SumRows, deterministic), never atomics.
#include <cstdint>

#include "flexgraph/ops/cuda/cuda_util.h"
#include "flexgraph/ops/kernels.h"
#include "flexgraph/ops/norm_kernels.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::ops::cuda {
namespace {

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Warps loop uniformly over rows (every lane of a warp takes the same rows), so the shuffles are
// full-warp.
#define FG_WARP_PER_ROW(r, n)                                                                   \
  const int lane = threadIdx.x & 31;                                                           \
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);                   \
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < (n); \
       r += warps)

__global__ void __launch_bounds__(kThreads)
    LayerNormKernel(const float* __restrict__ x, const float* __restrict__ gain,
                    const float* __restrict__ bias, int64_t n, int64_t d, float eps,
                    float* __restrict__ xhat, float* __restrict__ rstd, float* __restrict__ y) {
  FG_WARP_PER_ROW(r, n) {
    const float* xr = x + r * d;
    float s = 0.0f;
    for (int64_t j = lane; j < d; j += 32) s += xr[j];
    const float mean = WarpSum(s) / static_cast<float>(d);
    float q = 0.0f;
    for (int64_t j = lane; j < d; j += 32) q += (xr[j] - mean) * (xr[j] - mean);
    const float rs = rsqrtf(WarpSum(q) / static_cast<float>(d) + eps);
    if (lane == 0) rstd[r] = rs;
    for (int64_t j = lane; j < d; j += 32) {
      const float h = (xr[j] - mean) * rs;
      xhat[r * d + j] = h;
      y[r * d + j] = h * gain[j] + bias[j];
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    LayerNormGradKernel(const float* __restrict__ gy, const float* __restrict__ gain,
                        const float* __restrict__ xhat, const float* __restrict__ rstd, int64_t n,
                        int64_t d, float* __restrict__ gx) {
  FG_WARP_PER_ROW(r, n) {
    const float* gr = gy + r * d;
    const float* hr = xhat + r * d;
    float s1 = 0.0f, s2 = 0.0f;
#pragma unroll 1
    for (int64_t j = lane; j < d; j += 32) {
      const float t = gr[j] * gain[j];
      s1 += t;
      s2 += t * hr[j];
    }
    s1 = WarpSum(s1) / static_cast<float>(d);
    s2 = WarpSum(s2) / static_cast<float>(d);
    const float rs = rstd[r];
#pragma unroll 1
    for (int64_t j = lane; j < d; j += 32) gx[r * d + j] = rs * (gr[j] * gain[j] - s1 - hr[j] * s2);
  }
}

unsigned int WarpBlocksFor(int64_t rows) { return BlocksFor(rows * 32); }

}  // namespace

void LayerNormRows(const float* x, const float* gain, const float* bias, int64_t n, int64_t d, float eps,
                   float* xhat, float* rstd, float* y) {
  if (n == 0 || d == 0) return;
  LayerNormKernel<<<WarpBlocksFor(n), kThreads, 0, CurrentStream()>>>(x, gain, bias, n, d, eps, xhat, rstd, y);
  FG_CUDA_CHECK_LAUNCH();
}

void LayerNormRowsBackward(const float* gy, const float* gain, const float* xhat, const float* rstd, int64_t n,
                           int64_t d, float* gx, float* ggain, float* gbias) {
  if (d == 0) return;
  if (gx != nullptr && n > 0) {
    LayerNormGradKernel<<<WarpBlocksFor(n), kThreads, 0, CurrentStream()>>>(gy, gain, xhat, rstd, n, d, gx);
    FG_CUDA_CHECK_LAUNCH();
  }
  if (gbias != nullptr) SumRows(gy, n, d, gbias);
  if (ggain != nullptr) {
    const Tensor product = Tensor::Empty({n, d}, DType::kFloat32, Device::kCuda);
    MulElem(gy, xhat, product.f32(), n * d);
    SumRows(product.f32(), n, d, ggain);
  }
}

}  // namespace fg::ops::cuda
