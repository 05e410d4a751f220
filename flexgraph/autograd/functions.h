// Differentiable functions over Vars. Each wraps the tensor op of the same name (ops/ops.h) and
// records its backward. Shape errors abort naming the function and both shapes. Thread-compatible.
//
//   Var h = ag::Relu(ag::AddBias(ag::MatMul(x, w), b));
//   Var agg = ag::Spmm(adj, h, ops::SpmmReduce::kMean);
#pragma once

#include <vector>

#include "flexgraph/autograd/var.h"
#include "flexgraph/ops/ops.h"
#include "flexgraph/tensor/csr.h"

namespace fg::ag {

// --- dense -------------------------------------------------------------------------------------
Var MatMul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false);
// a1 b1 + a2 b2 ([m, k1] x [k1, n] + [m, k2] x [k2, n]): the second product accumulates into the
// first's output (no sum pass, no third buffer).
Var MatMulSum(const Var& a1, const Var& b1, const Var& a2, const Var& b2);
// Dropout(x, p, seed, row_ids) w (+ x2 w2 when both are defined), x [n, k]: the dropped x is never
// kept (backward draws it again from the counter-based mask), so a pass holds x alone, which the
// op producing x usually holds anyway.
Var DropoutMatMul(const Var& x, const Var& w, float p, uint64_t seed, const Tensor& row_ids,
                  const Var& x2 = Var(), const Var& w2 = Var());
// [B, m, k] @ [B, k, n].
Var BatchedMatMul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false);
// a + b, same shape.
Var Add(const Var& a, const Var& b);
// a - b, same shape.
Var Sub(const Var& a, const Var& b);
// x + bias, bias of x's last dimension broadcast over rows.
Var AddBias(const Var& x, const Var& bias);
// ReLU(AddBias(x, bias)) in one pass forward and one backward.
Var BiasRelu(const Var& x, const Var& bias);
// ReLU(x W + bias) for x [n, in], W [in, out]: the bias and ReLU run in the product's epilogue.
// With x2 and w2, ReLU(x W + x2 w2 + bias): no pre-activation is kept for backward.
Var LinearBiasRelu(const Var& x, const Var& weight, const Var& bias, const Var& x2 = Var(),
                   const Var& w2 = Var());
Var Mul(const Var& a, const Var& b);
Var Scale(const Var& x, float s);
// x[r, head h slice] * s[r, h]; s is [rows] or [rows, heads].
Var ScaleRows(const Var& x, const Var& s);
Var Relu(const Var& x);
Var LeakyRelu(const Var& x, float negative_slope = 0.01f);
Var Elu(const Var& x, float alpha = 1.0f);
Var Tanh(const Var& x);
Var Sigmoid(const Var& x);
Var Exp(const Var& x);
// Inverted dropout; identity when !training or p == 0. The mask of row r depends on
// (seed, row_ids[r] or r) only, never on threads or partitioning.
Var Dropout(const Var& x, float p, uint64_t seed, bool training, const Tensor& row_ids = Tensor());
Var Concat(const std::vector<Var>& parts);
// The rows of `parts` one after another: [sum of their rows, w] from parts [rows_i, w] of one
// width w (a part may have no rows); on their device. Each part's gradient is its block of rows.
Var ConcatRows(const std::vector<Var>& parts);
std::vector<Var> Split(const Var& x, const std::vector<int64_t>& widths);
Var Reshape(const Var& x, const Shape& shape);
Var RowL2Normalize(const Var& x, float eps = 1e-12f);
// Sum / mean of all elements: a [1] tensor.
Var Sum(const Var& x);
Var Mean(const Var& x);
// Column sums [n, d] -> [1, d] ... returned as [d].
Var SumRows(const Var& x);
// Mean over the middle axis of [n, k, d] -> [n, d].
Var MeanMiddle(const Var& x);

// --- sparse and segment ------------------------------------------------------------------------
// out[i] = reduce_{e in row i} w(e) x[col(e)]; edge_w undefined (1 or the matrix's values), [nnz]
// or [nnz, heads]; gradients flow to x and edge_w.
Var Spmm(const SparseMatrixPtr& a, const Var& x, ops::SpmmReduce reduce, const Var& edge_w = Var());
Var SpmmMax(const SparseMatrixPtr& a, const Var& x);
Var SddmmDot(const SparseMatrixPtr& a, const Var& u, const Var& v, int64_t heads = 1);
Var SddmmAdd(const SparseMatrixPtr& a, const Var& u, const Var& v);
// Softmax over each row's entries of a, scores [nnz, heads].
Var EdgeSoftmax(const SparseMatrixPtr& a, const Var& scores);
// Reduce contiguous segments of x rows (offsets int64 [segments + 1]).
Var SegmentReduce(const Tensor& offsets, const Var& x, ops::SegmentReduceOp op);
Var SegmentSoftmax(const Tensor& offsets, const Var& scores);
Var GatherRows(const Var& x, const Tensor& idx);
// x's rows [0, n) as a view (Tensor::FirstRows): GatherRows of 0 .. n-1 without the copy.
Var FirstRows(const Var& x, int64_t n);
Var ScatterAddRows(const Var& x, const Tensor& idx, int64_t num_rows);

// --- losses ------------------------------------------------------------------------------------
Var LogSoftmax(const Var& x);
// Mean negative log-likelihood over `rows` (int32) of log-probabilities logp [n, C] with labels
// (int64 [n]). Labels outside [0, C) abort.
Var NllLoss(const Var& logp, const Tensor& labels, const Tensor& rows);
// Mean binary cross-entropy of logits [n] (or [n, 1]) against float targets in [0, 1].
Var BceWithLogits(const Var& logits, const Tensor& targets);

}  // namespace fg::ag
