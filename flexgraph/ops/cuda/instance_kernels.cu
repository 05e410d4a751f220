// CUDA kernels for the metapath-instance ops (ops/instances.h): complex rotations and their
// gradients, the fused instance encoder and its gradients, per-head weighted sums and in-place row
// accumulation. Complex bodies are the FG_HD functions of ops/shared/complex.h that the CPU backend
// runs too, applied to one complex number (two floats) per thread. One thread per output element
// (or complex pair), in grid-stride loops; consecutive threads take consecutive columns. Each
// output is written by one thread summing its contributions in a fixed order (entry order, or
// fixed chunks of rows reduced in chunk order), never with atomics: results are deterministic.
#include <cstdint>
#include <vector>

#include <cub/device/device_scan.cuh>

#include "flexgraph/base/logging.h"
#include "flexgraph/ops/cuda/cuda_util.h"
#include "flexgraph/ops/instance_kernels.h"
#include "flexgraph/ops/ops.h"
#include "flexgraph/ops/shared/complex.h"
#include "flexgraph/ops/shared/sparse.h"
#include "flexgraph/tensor/device_alloc.h"

namespace fg::ops::cuda {
namespace {

// Rows per partial sum of a parameter gradient: fixed, so the summation order (and the result)
// never depends on the launch geometry.
constexpr int64_t kRowsPerPartial = 256;

int64_t PartsFor(int64_t rows) { return (rows + kRowsPerPartial - 1) / kRowsPerPartial; }

// y = x ∘ r (conj: y = x ∘ conj(r)) per complex pair; r repeats every `row` floats.
template <bool kConj>
__global__ void __launch_bounds__(kThreads)
    ComplexMulKernel(const float* __restrict__ x, const float* __restrict__ r, int64_t row,
                     float* __restrict__ y, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t j = 2 * i;
    if constexpr (kConj) {
      shared::ComplexMulConjRow(x + j, r + j % row, 2, y + j);
    } else {
      shared::ComplexMulRow(x + j, r + j % row, 2, y + j);
    }
  }
}

// partial[p, c..c+1] = Σ_{rows i of chunk p} g[i, c..] ∘ conj(x[i, c..]) (double), one thread per
// (chunk, complex pair).
__global__ void __launch_bounds__(kThreads)
    ConjProductPartialKernel(const float* __restrict__ g, const float* __restrict__ x, int64_t rows,
                             int64_t row, double* __restrict__ partial, int64_t n) {
  const int64_t pairs = row / 2;
  FG_GRID_STRIDE(i, n) {
    const int64_t p = i / pairs, c = 2 * (i % pairs);
    const int64_t lo = p * kRowsPerPartial;
    const int64_t hi = rows - lo < kRowsPerPartial ? rows : lo + kRowsPerPartial;
    double acc[2] = {0.0, 0.0};
    for (int64_t k = lo; k < hi; ++k) {
      shared::AccumulateConjProduct(g + k * row + c, x + k * row + c, 2, acc);
    }
    partial[p * row + c] = acc[0];
    partial[p * row + c + 1] = acc[1];
  }
}

// partial[p, l, c..c+1] = Σ_{instances i of chunk p} g[i, c..] ∘ conj(table[v_il, c..]) (double),
// one thread per (chunk, position l, complex pair).
__global__ void __launch_bounds__(kThreads)
    RotationPartialKernel(const float* __restrict__ g, const float* __restrict__ t,
                          const int32_t* __restrict__ idx, int64_t n_inst, int64_t len, int64_t d,
                          double* __restrict__ partial, int64_t n) {
  const int64_t pairs = d / 2, per_part = len * pairs;
  FG_GRID_STRIDE(i, n) {
    const int64_t p = i / per_part, l = (i % per_part) / pairs, c = 2 * (i % pairs);
    const int64_t lo = p * kRowsPerPartial;
    const int64_t hi = n_inst - lo < kRowsPerPartial ? n_inst : lo + kRowsPerPartial;
    double acc[2] = {0.0, 0.0};
    for (int64_t k = lo; k < hi; ++k) {
      shared::AccumulateConjProduct(g + k * d + c,
                                    t + static_cast<int64_t>(idx[k * len + l]) * d + c, 2, acc);
    }
    double* out = partial + p * len * d + l * d + c;
    out[0] = acc[0];
    out[1] = acc[1];
  }
}

// out[j] += float(partial[p, j] / divisor), in chunk order p = 0, 1, ...
__global__ void __launch_bounds__(kThreads)
    AddPartialsKernel(const double* __restrict__ partial, int64_t parts, int64_t width,
                      double divisor, float* __restrict__ out) {
  FG_GRID_STRIDE(j, width) {
    float o = out[j];
    for (int64_t p = 0; p < parts; ++p) o += static_cast<float>(partial[p * width + j] / divisor);
    out[j] = o;
  }
}

// out[i] = 1/L Σ_l r_l ∘ table[v_il], one thread per (instance, complex pair).
__global__ void __launch_bounds__(kThreads)
    EncodeRotatedKernel(const float* __restrict__ t, const int32_t* __restrict__ idx, int64_t len,
                        const float* __restrict__ r, int64_t d, float inv, float* __restrict__ out,
                        int64_t n) {
  const int64_t pairs = d / 2;
  FG_GRID_STRIDE(i, n) {
    const int64_t inst = i / pairs, c = 2 * (i % pairs);
    float acc[2] = {0.0f, 0.0f};
    for (int64_t l = 0; l < len; ++l) {
      shared::AddComplexMulRow(t + static_cast<int64_t>(idx[inst * len + l]) * d + c, r + l * d + c,
                               2, acc);
    }
    out[inst * d + c] = acc[0] * inv;
    out[inst * d + c + 1] = acc[1] * inv;
  }
}

// out[i] = 1/L Σ_l table[v_il], one thread per (instance, column).
__global__ void __launch_bounds__(kThreads)
    EncodeMeanKernel(const float* __restrict__ t, const int32_t* __restrict__ idx, int64_t len,
                     int64_t d, float inv, float* __restrict__ out, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t inst = i / d, j = i % d;
    float acc = 0.0f;
    for (int64_t l = 0; l < len; ++l) acc += t[static_cast<int64_t>(idx[inst * len + l]) * d + j];
    out[i] = acc * inv;
  }
}

// The blocks' layout on the device: entry_first [nb + 1], out_first [nb + 1], lengths [nb] and
// rotation addresses [nb] (0: the plain mean), one int64 array.
struct BlockMeta {
  const int64_t* entry_first;
  const int64_t* out_first;
  const int64_t* len;
  const int64_t* rot;
};

// The table gradient in two deterministic steps, so that vertices in many instances do not
// serialise the launch: a vertex's entries (in entry order) are cut into chunks of kGradChunk;
// chunk_off[v] is v's first chunk (an exclusive scan of the counts).
constexpr int64_t kGradChunk = 32;

__global__ void __launch_bounds__(kThreads)
    ChunkCountsKernel(const int64_t* __restrict__ by_off, int64_t rows, int64_t* __restrict__ counts) {
  FG_GRID_STRIDE(v, rows + 1) {
    counts[v] = v < rows ? (by_off[v + 1] - by_off[v] + kGradChunk - 1) / kGradChunk : 0;
  }
}

// partial[j, c..c+kUnit) = Σ_{entries k of chunk j, in entry order} conj(r_bl) g_{b,i} / L_b
// (unrotated blocks: g_{b,i} / L_b), one thread per (chunk, kUnit columns) of at most
// max_chunks; kUnit = 2 (complex pairs) when d is even, else 1 (no block has rotations).
template <int kUnit>
__global__ void __launch_bounds__(kThreads)
    EncodeGradChunkKernel(const int64_t* __restrict__ by_off, const int32_t* __restrict__ by_entry,
                          const int64_t* __restrict__ chunk_off, int64_t rows, BlockMeta meta,
                          int64_t nb, const float* __restrict__ g, int64_t d,
                          float* __restrict__ partial, int64_t n) {
  const int64_t units = d / kUnit;
  const int64_t chunks = chunk_off[rows];
  FG_GRID_STRIDE(i, n) {
    const int64_t j = i / units, c = kUnit * (i % units);
    if (j >= chunks) continue;
    const int64_t v = shared::RowOfEntry(chunk_off, rows, j);  // chunk_off[v] <= j < chunk_off[v + 1]
    const int64_t lo = by_off[v] + (j - chunk_off[v]) * kGradChunk;
    const int64_t hi = lo + kGradChunk < by_off[v + 1] ? lo + kGradChunk : by_off[v + 1];
    float acc[kUnit] = {};
    for (int64_t e = lo; e < hi; ++e) {
      const int64_t k = by_entry[e];
      const int64_t b = shared::RowOfEntry(meta.entry_first, nb, k);
      const int64_t len = meta.len[b], local = k - meta.entry_first[b];
      const float inv = 1.0f / static_cast<float>(len);
      const float* gi = g + (meta.out_first[b] + local / len) * d + c;
      if constexpr (kUnit == 2) {
        const float* r = reinterpret_cast<const float*>(static_cast<intptr_t>(meta.rot[b]));
        if (r != nullptr) {
          shared::AddScaledConjRow(gi, r + (local % len) * d + c, 2, inv, acc);
          continue;
        }
      }
      for (int u = 0; u < kUnit; ++u) acc[u] += inv * gi[u];
    }
    for (int u = 0; u < kUnit; ++u) partial[j * d + c + u] = acc[u];
  }
}

// gt[v, c] = Σ of v's chunks' partial sums, in chunk order; one thread per element.
__global__ void __launch_bounds__(kThreads)
    SumChunksKernel(const int64_t* __restrict__ chunk_off, const float* __restrict__ partial,
                    int64_t d, float* __restrict__ gt, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t v = i / d, c = i % d;
    float acc = 0.0f;
    for (int64_t j = chunk_off[v]; j < chunk_off[v + 1]; ++j) acc += partial[j * d + c];
    gt[i] = acc;
  }
}

// y[r, h d + j] = Σ_{e in row r} alpha[e, h] x[col(e), j], one thread per output element.
__global__ void __launch_bounds__(kThreads)
    HeadWeightedSumKernel(const int64_t* __restrict__ off, const int32_t* __restrict__ col,
                          const float* __restrict__ x, const float* __restrict__ alpha,
                          int64_t heads, int64_t d, float* __restrict__ y, int64_t n) {
  const int64_t width = heads * d;
  FG_GRID_STRIDE(i, n) {
    const int64_t r = i / width, h = (i % width) / d, j = i % d;
    float acc = 0.0f;
    for (int64_t e = off[r]; e < off[r + 1]; ++e) {
      acc += alpha[e * heads + h] * x[static_cast<int64_t>(col[e]) * d + j];
    }
    y[i] = acc;
  }
}

// gx[i, j] = Σ_{transposed entries te of row i} Σ_h alpha[perm[te], h] g[col(te), h d + j], in
// transposed entry order, one thread per output element.
__global__ void __launch_bounds__(kThreads)
    HeadWeightedSumGradXKernel(const int64_t* __restrict__ t_off, const int32_t* __restrict__ t_col,
                               const int32_t* __restrict__ perm, const float* __restrict__ alpha,
                               int64_t heads, const float* __restrict__ g, int64_t d,
                               float* __restrict__ gx, int64_t n) {
  const int64_t width = heads * d;
  FG_GRID_STRIDE(i, n) {
    const int64_t row = i / d, j = i % d;
    float acc = 0.0f;
    for (int64_t te = t_off[row]; te < t_off[row + 1]; ++te) {
      const int64_t e = perm[te];
      const float* gr = g + static_cast<int64_t>(t_col[te]) * width + j;
      for (int64_t h = 0; h < heads; ++h) acc += alpha[e * heads + h] * gr[h * d];
    }
    gx[i] = acc;
  }
}

// ga[e, h] = <g[row(e), h slice], x[col(e)]>, one thread per (entry, head).
__global__ void __launch_bounds__(kThreads)
    HeadWeightedSumGradAlphaKernel(const int64_t* __restrict__ off, const int32_t* __restrict__ col,
                                   int64_t rows, const float* __restrict__ x,
                                   const float* __restrict__ g, int64_t heads, int64_t d,
                                   float* __restrict__ ga, int64_t n) {
  FG_GRID_STRIDE(i, n) {
    const int64_t e = i / heads, h = i % heads;
    const int64_t r = shared::RowOfEntry(off, rows, e);
    const float* gr = g + r * heads * d + h * d;
    const float* xi = x + static_cast<int64_t>(col[e]) * d;
    float s = 0.0f;
    for (int64_t j = 0; j < d; ++j) s += gr[j] * xi[j];
    ga[i] = s;
  }
}

// y[idx[k], j] += g[k, j] (distinct idx: one thread per element, no races).
__global__ void __launch_bounds__(kThreads)
    AddRowsKernel(float* __restrict__ y, const int32_t* __restrict__ idx,
                  const float* __restrict__ g, int64_t w, int64_t n) {
  FG_GRID_STRIDE(i, n) { y[static_cast<int64_t>(idx[i / w]) * w + i % w] += g[i]; }
}

void AddPartials(const double* partial, int64_t parts, int64_t width, double divisor, float* out) {
  AddPartialsKernel<<<BlocksFor(width), kThreads, 0, CurrentStream()>>>(partial, parts, width,
                                                                         divisor, out);
  FG_CUDA_CHECK_LAUNCH();
}

}  // namespace

void ComplexMul(const Tensor& x, const Tensor& r, int64_t row, Tensor* y) {
  const int64_t n = x.numel() / 2;
  if (n == 0) return;
  ComplexMulKernel<false><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(x.f32(), r.f32(), row,
                                                                           y->f32(), n);
  FG_CUDA_CHECK_LAUNCH();
}

void ComplexMulGradX(const Tensor& g, const Tensor& r, int64_t row, Tensor* gx) {
  const int64_t n = g.numel() / 2;
  if (n == 0) return;
  ComplexMulKernel<true><<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(g.f32(), r.f32(), row,
                                                                          gx->f32(), n);
  FG_CUDA_CHECK_LAUNCH();
}

void ComplexMulGradR(const Tensor& g, const Tensor& x, int64_t row, Tensor* gr) {
  const int64_t rows = x.dim(0), parts = PartsFor(rows);
  if (parts == 0 || row == 0) return;
  auto* partial = static_cast<double*>(ThreadScratch(0, sizeof(double) * parts * row));
  const int64_t n = parts * (row / 2);
  ConjProductPartialKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(g.f32(), x.f32(), rows,
                                                                            row, partial, n);
  FG_CUDA_CHECK_LAUNCH();
  AddPartials(partial, parts, row, 1.0, gr->f32());
}

void EncodeInstances(const Tensor& table, const InstanceBlocks& blocks,
                     const std::vector<int64_t>& out_first, Tensor* y) {
  const int64_t d = table.row_width();
  for (size_t b = 0; b < blocks.vertices.size(); ++b) {
    const Tensor& v = blocks.vertices[b];
    const int64_t len = v.dim(1);
    const float inv = 1.0f / static_cast<float>(len);
    float* out = y->f32() + out_first[b] * d;
    if (blocks.rotations[b].defined()) {
      const int64_t n = v.dim(0) * (d / 2);
      if (n == 0) continue;
      EncodeRotatedKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
          table.f32(), v.i32(), len, blocks.rotations[b].f32(), d, inv, out, n);
    } else {
      const int64_t n = v.dim(0) * d;
      if (n == 0) continue;
      EncodeMeanKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(table.f32(), v.i32(), len, d,
                                                                        inv, out, n);
    }
    FG_CUDA_CHECK_LAUNCH();
  }
}

void EncodeInstancesGradTable(const Tensor& g, const InstanceBlocks& blocks,
                              const std::vector<int64_t>& out_first,
                              const std::vector<int64_t>& entry_first, Tensor* gt) {
  const int64_t nb = static_cast<int64_t>(blocks.vertices.size());
  const int64_t rows = gt->rows(), d = gt->row_width();
  if (rows == 0 || d == 0) return;
  // Every block's vertices, one after the other, grouped by table row (in entry order).
  Tensor all = Tensor::Empty({entry_first[nb]}, DType::kInt32, Device::kCuda);
  for (int64_t b = 0; b < nb; ++b) {
    const Tensor& v = blocks.vertices[b];
    DeviceCopyAsync(all.i32() + entry_first[b], true, v.i32(), true, v.nbytes());
  }
  const Csr by_vertex = ops::GroupByIndex(all, rows);
  std::vector<int64_t> meta(entry_first.begin(), entry_first.end());
  meta.insert(meta.end(), out_first.begin(), out_first.end());
  bool rotated = false;
  for (int64_t b = 0; b < nb; ++b) meta.push_back(blocks.vertices[b].dim(1));
  for (int64_t b = 0; b < nb; ++b) {
    const Tensor& r = blocks.rotations[b];
    rotated = rotated || r.defined();
    meta.push_back(r.defined() ? static_cast<int64_t>(reinterpret_cast<intptr_t>(r.f32())) : 0);
  }
  const Tensor meta_dev = Tensor::FromVector(meta).To(Device::kCuda);
  const int64_t* m = meta_dev.i64();
  const BlockMeta bm{m, m + nb + 1, m + 2 * (nb + 1), m + 2 * (nb + 1) + nb};
  FG_CHECK(d % 2 == 0 || !rotated) << "EncodeInstancesGradTable: rotations need an even width, got "
                                   << d;
  const cudaStream_t stream = CurrentStream();
  // Chunks: at most one partial one per vertex beyond the full ones.
  const int64_t max_chunks = entry_first[nb] / kGradChunk + rows;
  auto* counts = static_cast<int64_t*>(DeviceAlloc(sizeof(int64_t) * (rows + 1)));
  auto* chunk_off = static_cast<int64_t*>(DeviceAlloc(sizeof(int64_t) * (rows + 1)));
  auto* partial = static_cast<float*>(DeviceAlloc(sizeof(float) * max_chunks * d));
  ChunkCountsKernel<<<BlocksFor(rows + 1), kThreads, 0, stream>>>(by_vertex.row_ptr(), rows, counts);
  FG_CUDA_CHECK_LAUNCH();
  size_t temp_bytes = 0;
  FG_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, counts, chunk_off, rows + 1, stream));
  void* temp = DeviceAlloc(temp_bytes);
  FG_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, counts, chunk_off, rows + 1, stream));
  const int32_t* col = entry_first[nb] > 0 ? by_vertex.col() : nullptr;
  if (d % 2 == 0) {
    const int64_t n = max_chunks * (d / 2);
    EncodeGradChunkKernel<2><<<BlocksFor(n), kThreads, 0, stream>>>(
        by_vertex.row_ptr(), col, chunk_off, rows, bm, nb,
        g.f32(), d, partial, n);
  } else {
    const int64_t n = max_chunks * d;
    EncodeGradChunkKernel<1><<<BlocksFor(n), kThreads, 0, stream>>>(
        by_vertex.row_ptr(), col, chunk_off, rows, bm, nb,
        g.f32(), d, partial, n);
  }
  FG_CUDA_CHECK_LAUNCH();
  SumChunksKernel<<<BlocksFor(rows * d), kThreads, 0, stream>>>(chunk_off, partial, d, gt->f32(),
                                                               rows * d);
  FG_CUDA_CHECK_LAUNCH();
  DeviceFree(temp, temp_bytes);  // stream-ordered: reused by later work of this stream only
  DeviceFree(partial, sizeof(float) * max_chunks * d);
  DeviceFree(chunk_off, sizeof(int64_t) * (rows + 1));
  DeviceFree(counts, sizeof(int64_t) * (rows + 1));
}

void EncodeInstancesGradRotation(const Tensor& g, const Tensor& table, const Tensor& vertices,
                                 int64_t out_first, Tensor* gr) {
  const int64_t n_inst = vertices.dim(0), len = vertices.dim(1), d = table.row_width();
  const int64_t parts = PartsFor(n_inst);
  if (parts == 0 || len * d == 0) return;
  auto* partial = static_cast<double*>(ThreadScratch(0, sizeof(double) * parts * len * d));
  const int64_t n = parts * len * (d / 2);
  RotationPartialKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
      g.f32() + out_first * d, table.f32(), vertices.i32(), n_inst, len, d, partial, n);
  FG_CUDA_CHECK_LAUNCH();
  AddPartials(partial, parts, len * d, static_cast<double>(len), gr->f32());
}

void HeadWeightedSum(const Csr& a, const Tensor& x, const Tensor& alpha, Tensor* y) {
  const int64_t heads = alpha.row_width(), d = x.row_width();
  const int64_t n = a.num_rows * heads * d;
  if (n == 0) return;
  HeadWeightedSumKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
      a.row_ptr(), a.nnz() > 0 ? a.col() : nullptr, x.f32(), alpha.f32(), heads, d, y->f32(), n);
  FG_CUDA_CHECK_LAUNCH();
}

void HeadWeightedSumGradX(const SparseMatrix& a, const Tensor& alpha, const Tensor& g, Tensor* gx) {
  const int64_t heads = alpha.row_width(), d = gx->row_width();
  const int64_t n = gx->rows() * d;
  if (n == 0) return;
  const Csr t = a.transpose().To(Device::kCuda);
  const bool any = t.nnz() > 0;
  const Tensor perm = any ? a.entry_perm().To(Device::kCuda) : Tensor();
  HeadWeightedSumGradXKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
      t.row_ptr(), any ? t.col() : nullptr, any ? perm.i32() : nullptr, alpha.f32(), heads,
      g.f32(), d, gx->f32(), n);
  FG_CUDA_CHECK_LAUNCH();
}

void HeadWeightedSumGradAlpha(const Csr& a, const Tensor& x, const Tensor& g, Tensor* ga) {
  const int64_t heads = ga->row_width(), d = x.row_width();
  const int64_t n = a.nnz() * heads;
  if (n == 0) return;
  HeadWeightedSumGradAlphaKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(
      a.row_ptr(), a.col(), a.num_rows, x.f32(), g.f32(), heads, d, ga->f32(), n);
  FG_CUDA_CHECK_LAUNCH();
}

void AddRowsInPlace(Tensor* y, const Tensor& idx, const Tensor& g) {
  const int64_t w = y->row_width(), n = idx.numel() * w;
  if (n == 0) return;
  AddRowsKernel<<<BlocksFor(n), kThreads, 0, CurrentStream()>>>(y->f32(), idx.i32(), g.f32(), w,
                                                                 n);
  FG_CUDA_CHECK_LAUNCH();
}

}  // namespace fg::ops::cuda
