// Edge ops: the tensor ops of layers that carry an edge state (DESIGN.md, "Edges are first-class").
// A Csr here is an in-edge structure: row r lists the entries whose destination is r, column c is
// an entry's source. EdgeInput gathers both ends of every entry next to the entry's own state (an
// SDDMM-like op); SegmentStd is the standard-deviation reduction that edge aggregation adds to
// SegmentReduce's sum, mean and max. Shape errors abort naming the op. Thread-safe.
//
//   Tensor in = ops::EdgeInput(adj, h, h, e);              // [nnz, 2d + de]
//   Tensor s = ops::SegmentStd(adj.offsets, messages, 1e-5f);  // [rows, d]
//
// Devices: CPU (ops/cpu/edge.cc) and CUDA (ops/cuda/edge_kernels.cu); index arrays on the host are
// placed on a GPU operand's device for the call (ops/placement.h).
#pragma once

#include <cstdint>

#include "flexgraph/tensor/csr.h"
#include "flexgraph/tensor/tensor.h"

namespace fg::ops {

// out[k] = [xs[col(k)] | xd[row(k)] | e[k]] for every entry k of `a`: [nnz, ds + dd + de].
// xs has a.num_cols rows (sources), xd a.num_rows rows (destinations); e is undefined (de = 0) or
// [nnz, de].
Tensor EdgeInput(const Csr& a, const Tensor& xs, const Tensor& xd, const Tensor& e);

// The gradients of EdgeInput from g = dL/dout [nnz, ds + dd + de]. `a_t` is a's transpose and
// `perm` its entry permutation (SparseMatrix::transpose, entry_perm): gxs[c] sums g's source
// columns over the entries of column c in entry order (deterministic), gxd[r] sums g's destination
// columns over row r's entries, ge is g's last de columns. A null output pointer skips its part.
void EdgeInputBackward(const Csr& a, const Csr& a_t, const Tensor& perm, const Tensor& g, int64_t ds,
                       int64_t dd, Tensor* gxs, Tensor* gxd, Tensor* ge);

// out[i] = sqrt(var_i + eps), var_i the (biased) variance of rows offsets[i] .. offsets[i+1] of x
// per column (0 for an empty segment): [segments, d].
Tensor SegmentStd(const Tensor& offsets, const Tensor& x, float eps);
// Its gradient: gx[k] = g[i] (x[k] - mean_i) / (n_i y[i]) for the rows k of segment i.
Tensor SegmentStdBackward(const Tensor& offsets, const Tensor& x, const Tensor& y, const Tensor& g);

}  // namespace fg::ops
