// CUDA kernels of node-wise sampling: one thread per stacked row, in grid-stride loops, running
// the steps of sampling/pick.h, whose draws are the host sampler's: both keep the same entries.
#include "flexgraph/ops/cuda/cuda_util.h"
#include "sampling/cuda/rows.h"
#include "sampling/pick.h"

namespace fg::sampling::cuda {
namespace {

using ops::cuda::BlocksFor;
using ops::cuda::CurrentStream;
using ops::cuda::kThreads;

__global__ void __launch_bounds__(kThreads)
    RowsKernel(MatrixView a, const int64_t* __restrict__ vertices, int64_t n, int fanout,
               int64_t* __restrict__ row, int64_t* __restrict__ kept, int64_t* missing) {
  FG_GRID_STRIDE(r, n) {
    const int64_t v = vertices[r];
    const int64_t at = RowOf(a, v);
    row[r] = at;
    if (at < 0) {
      atomicMin(reinterpret_cast<unsigned long long*>(missing), static_cast<unsigned long long>(r));
    }
    kept[r] = at < 0 ? 0 : KeptEntries(a, at, fanout);
  }
}

__global__ void __launch_bounds__(kThreads)
    SampleKernel(MatrixView a, uint64_t seed, const uint64_t* __restrict__ prefix,
                 const int32_t* __restrict__ group, const int64_t* __restrict__ vertices,
                 const int64_t* __restrict__ row, const int64_t* __restrict__ offsets, int64_t n,
                 int32_t* __restrict__ cols, float* __restrict__ weights) {
  FG_GRID_STRIDE(r, n) {
    if (row[r] < 0) continue;
    const int64_t first = offsets[r];
    DrawRow(a, seed, prefix[group[r]], vertices[r], row[r], offsets[r + 1] - first, cols + first,
            weights != nullptr ? weights + first : nullptr);
  }
}

}  // namespace

void LaunchRows(const MatrixView& a, const int64_t* vertices, int64_t n, int fanout, int64_t* row,
                int64_t* kept, int64_t* missing) {
  if (n == 0) return;
  RowsKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(a, vertices, n, fanout, row, kept, missing);
  FG_CUDA_CHECK_LAUNCH();
}

void LaunchSampleRows(const MatrixView& a, uint64_t seed, const uint64_t* prefix, const int32_t* group,
                      const int64_t* vertices, const int64_t* row, const int64_t* offsets, int64_t n,
                      int32_t* cols, float* weights) {
  if (n == 0) return;
  SampleKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(a, seed, prefix, group, vertices, row,
                                                               offsets, n, cols, weights);
  FG_CUDA_CHECK_LAUNCH();
}

}  // namespace fg::sampling::cuda
