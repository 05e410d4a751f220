// Ops of metapath-instance models (MAGNN): complex rotations, the fused instance encoder, per-head
// weighted sums of shared rows, and in-place row accumulation. Complex numbers are interleaved
// (re, im) float pairs along the last dimension. Gradients are separate ops (the autograd functions
// in autograd/instance_functions.h combine them); every reduction sums in a fixed order, so results
// never depend on the thread count or launch geometry. CPU kernels and CUDA twins
// (ops/instance_kernels.h), picked by the float operand's device; a build without the CUDA
// backend aborts naming the op. Float operands must share a device and outputs are allocated there;
// index arrays (vertex blocks, Csr arrays, row indices) held on the host are copied to a GPU
// operand's device for the call. Vertex ids are checked on the host (a copy when they live on the
// GPU). Shape errors are programmer errors (FG_CHECK). Thread-safe.
//
//   Tensor y = ops::ComplexMul(x, r);                          // x [n, L, d], r [L, d]
//   Tensor h = ops::EncodeInstances(table, {{mdm, mam}, {r_mdm, r_mam}});
#pragma once

#include <vector>

#include "flexgraph/tensor/csr.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::ops {

// [1, 2n]: n copies of the complex number re + i im.
Tensor ComplexFull(int64_t n, float re, float im);
// y = x ∘ r: x [n, d] or [n, L, d] (d even), r [L, d] broadcast over n (L = 1 for rank 2).
Tensor ComplexMul(const Tensor& x, const Tensor& r);
// Gradients of ComplexMul: g ∘ conj(r) (x's shape), and Σ_i g_i ∘ conj(x_i) (r's shape).
Tensor ComplexMulGradX(const Tensor& g, const Tensor& r);
Tensor ComplexMulGradR(const Tensor& g, const Tensor& x, const Shape& r_shape);

// Metapath instances in blocks: block b holds vertices[b], int32 [n_b, L_b] rows of a table of
// width d, and rotations[b], [L_b, d] (undefined: the plain mean).
struct InstanceBlocks {
  std::vector<Tensor> vertices;
  std::vector<Tensor> rotations;
};
// out[i] = 1/L Σ_l r_l ∘ table[v_il] (or the mean of the rows), blocks one after the other:
// [Σ n_b, d]. Streams the rows; never materialises [n, L, d].
Tensor EncodeInstances(const Tensor& table, const InstanceBlocks& blocks);
// Gradient of EncodeInstances for the table [table_rows, d], summed per table row in entry order.
Tensor EncodeInstancesGradTable(const Tensor& g, const InstanceBlocks& blocks, int64_t table_rows);
// Gradient for rotations[b] ([L_b, d]).
Tensor EncodeInstancesGradRotation(const Tensor& g, const Tensor& table, const InstanceBlocks& blocks,
                                   size_t b);

// y[r, h d + j] = Σ_{e in row r} alpha[e, h] x[col(e), j]: every head weights the same rows of x
// [cols, d] with its own weights alpha [nnz, heads]; y is [rows, heads d].
Tensor HeadWeightedSum(const Csr& a, const Tensor& x, const Tensor& alpha);
// Gradients: for x (through the transposed structure, in transposed entry order) and alpha.
Tensor HeadWeightedSumGradX(const SparseMatrix& a, const Tensor& alpha, const Tensor& g);
Tensor HeadWeightedSumGradAlpha(const Csr& a, const Tensor& x, const Tensor& g);

// y[idx[k]] += g[k] in place, for distinct indices idx (int32).
void AddRowsInPlace(Tensor* y, const Tensor& idx, const Tensor& g);

}  // namespace fg::ops
