// Tensor ops: the public entry points of every kernel (no autograd; see autograd/functions.h).
// Each op validates shapes, allocates its output on the input's device and dispatches to the CPU
// kernels (ops/cpu) or CUDA kernels (ops/cuda). Shape errors are programmer errors (FG_CHECK naming
// the op and the shapes). Dense float operands must share a device; index operands (a Csr's
// arrays, offsets, row indices, row ids) held on the host are copied to a GPU operand's device for
// the call, so code that runs often places them there once (Csr::To, Tensor::To).
// Thread-safe: ops have no shared mutable state.
//
//   Tensor h = ops::Matmul(x, w);                        // [n, k] x [k, m]
//   Tensor agg = ops::Spmm(adj, h, ops::SpmmReduce::kMean);  // mean over in-neighbours
#pragma once

#include <vector>

#include "flexgraph/ops/kernels.h"
#include "flexgraph/tensor/csr.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::ops {

// --- dense -------------------------------------------------------------------------------------
// op(a) @ op(b) for rank-2 tensors.
Tensor Matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// c = alpha * op(a) @ op(b) + beta * c (c already allocated with the right shape).
void MatmulInto(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, float alpha,
                float beta, Tensor* c);
// ReLU(a @ w + bias): [m, k] x [k, n] + [n], the bias and ReLU fused into the product.
Tensor MatmulBiasRelu(const Tensor& a, const Tensor& w, const Tensor& bias);
// Batched [B, m, k] @ [B, k, n] (with optional transposes of the inner matrices).
Tensor BatchedMatmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

Tensor Apply(UnaryOp op, const Tensor& x, float alpha = 0.0f);
Tensor ApplyBackward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy,
                     float alpha = 0.0f);
// a + alpha * b: b has a's numel, or b's numel equals a's last dimension (broadcast over rows).
Tensor Add(const Tensor& a, const Tensor& b, float alpha = 1.0f);
// ReLU(x + bias), bias one row broadcast over x's rows, in one pass.
Tensor BiasRelu(const Tensor& x, const Tensor& bias);
// The same, written over *x.
void BiasReluInPlace(Tensor* x, const Tensor& bias);
// From y = BiasRelu(x, bias) and gy = dL/dy: dL/dx, and dL/dbias into *gbias, in one pass.
Tensor BiasReluBackward(const Tensor& y, const Tensor& gy, Tensor* gbias);
// The same, dL/dx written over *gy.
void BiasReluBackwardInPlace(const Tensor& y, Tensor* gy, Tensor* gbias);
// *a += alpha * b (same numel).
void AddInPlace(Tensor* a, const Tensor& b, float alpha = 1.0f);
Tensor Mul(const Tensor& a, const Tensor& b);
Tensor Scale(const Tensor& x, float s);
// y[r, head h slice] = s[r, h] * x[r, head h slice]; s is [rows] or [rows, heads].
Tensor ScaleRows(const Tensor& x, const Tensor& s);
// Sum over rows: [n, d] -> [d].
Tensor SumRows(const Tensor& x);
// Concatenation / split along the last dimension of rank-2 tensors.
Tensor Concat(const std::vector<Tensor>& parts);
std::vector<Tensor> Split(const Tensor& x, const std::vector<int64_t>& widths);

// --- sparse (Csr rows are outputs, columns index rows of the dense operand) ---------------------
enum class SpmmReduce { kSum, kMean };
// out[i] = reduce_{e in row i} w(e) * x[col(e)]. `edge_w` is undefined (all 1, or a.values when
// present), [nnz], or [nnz, heads] (head h scales columns [h*W/heads, (h+1)*W/heads)).
Tensor Spmm(const Csr& a, const Tensor& x, SpmmReduce reduce, const Tensor& edge_w = Tensor());
// Spmm into `out`: a.num_rows rows of x's width, in memory on x's device (a message being built).
void SpmmInto(const Csr& a, const Tensor& x, SpmmReduce reduce, float* out, const Tensor& edge_w = Tensor());
// out[i, j] = max_{e in row i} x[col(e), j] (0 for empty rows); argmax gets the winning column.
Tensor SpmmMax(const Csr& a, const Tensor& x, Tensor* argmax);
// Gradient of SpmmMax w.r.t. x, given the transpose of a.
Tensor SpmmMaxBackward(const Csr& a_transposed, const Tensor& argmax, const Tensor& gy);
// out[e, h] = <a[row(e)], b[col(e)]> over head h's slice of the features; [nnz, heads].
Tensor SddmmDot(const Csr& csr, const Tensor& a, const Tensor& b, int64_t heads = 1);
// out[e, h] = u[row(e), h] + v[col(e), h]; u [rows, heads], v [cols, heads].
Tensor SddmmAdd(const Csr& csr, const Tensor& u, const Tensor& v);

// --- segments (segment i is entries offsets[i] .. offsets[i+1]) ---------------------------------
Tensor SegmentSoftmax(const Tensor& offsets, const Tensor& scores);
Tensor SegmentSoftmaxBackward(const Tensor& offsets, const Tensor& y, const Tensor& gy);
enum class SegmentReduceOp { kSum = 0, kMean = 1, kMax = 2 };
// [nnz, d] -> [segments, d]; for kMax, argmax receives the winning entry (-1 for empty segments).
Tensor SegmentReduce(const Tensor& offsets, const Tensor& x, SegmentReduceOp op,
                     Tensor* argmax = nullptr);
// The gradient of SegmentReduce over `rows` input rows from the output's gradient g (argmax: the
// forward's, for kMax).
Tensor SegmentReduceBackward(const Tensor& offsets, const Tensor& g, SegmentReduceOp op,
                             const Tensor& argmax, int64_t rows);

// --- indexing ----------------------------------------------------------------------------------
// out[k] = x[idx[k]] (idx int32).
Tensor GatherRows(const Tensor& x, const Tensor& idx);
// out[idx[k]] += x[k] for out of `num_rows` rows; deterministic (fixed summation order).
Tensor ScatterAddRows(const Tensor& x, const Tensor& idx, int64_t num_rows);
// The Csr grouping positions k by idx[k] (rows = num_rows; positions ascending within a row), for
// repeated scatter-adds; built on idx's device (a radix sort on a GPU, no host round trip).
Csr GroupByIndex(const Tensor& idx, int64_t num_rows);

// --- normalisation, losses, dropout ------------------------------------------------------------
Tensor LogSoftmax(const Tensor& x);
Tensor LogSoftmaxBackward(const Tensor& y, const Tensor& gy);
Tensor RowL2Normalize(const Tensor& x, float eps, Tensor* norms);
Tensor RowL2NormalizeBackward(const Tensor& y, const Tensor& norms, const Tensor& gy, float eps);
// The mean negative log-likelihood of rows' labels: -(1/m) sum_k logp[rows[k], labels[rows[k]]]
// ([1] on logp's device); labels int64 per row of logp, rows int32 (distinct), both index operands.
// Labels must lie in [0, C): checked on the host for host operands (a caller placing labels on a
// GPU checks them once).
Tensor NllLoss(const Tensor& logp, const Tensor& labels, const Tensor& rows);
// Its gradient w.r.t. logp for the loss's gradient g ([1], on logp's device: read there).
Tensor NllLossBackward(const Tensor& g, const Tensor& logp, const Tensor& labels,
                       const Tensor& rows);
// The mean binary cross-entropy of logits x against targets t of the same numel ([1] on x's
// device), and its gradient w.r.t. x for the loss's gradient g ([1] on x's device).
Tensor BceWithLogits(const Tensor& x, const Tensor& t);
Tensor BceWithLogitsBackward(const Tensor& g, const Tensor& x, const Tensor& t);
// Inverted dropout on the stored entries of x (values required): entry (r, c) keeps its value
// times 1/(1-p) exactly when DropoutMask keeps dense element (r, c), so sparse and dense inputs
// see the same mask. CPU only.
Csr SparseDropout(const Csr& x, float p, uint64_t seed, const Tensor& row_ids = Tensor());
// The rows of a dense float matrix as a Csr of its non-zero entries (with values).
Csr DenseToCsr(const Tensor& x);
// A [rows, cols] mask of 0 and 1/(1-p) on `device`; element (r, j) is a function of
// (seed, row_ids[r], j) only, identical on every device. row_ids (int64) live on `device`.
Tensor DropoutMask(int64_t rows, int64_t cols, float p, uint64_t seed,
                   const Tensor& row_ids = Tensor(), Device device = Device::kCpu);
// x * DropoutMask(x.rows(), x.row_width(), p, seed, row_ids, x.device()) without storing the mask;
// exactly equal to that product. Applied to a gradient it is the backward pass.
Tensor Dropout(const Tensor& x, float p, uint64_t seed, const Tensor& row_ids = Tensor());
// The same, written over *x.
void DropoutInPlace(Tensor* x, float p, uint64_t seed, const Tensor& row_ids = Tensor());

}  // namespace fg::ops
