// The 1.5D distributed sparse-dense product of CAGNET with replication c on a (P/c) x c grid
// (ProcessGrid::Make15D), forward Z = A H and backward G_H = A^T G_Z, sparsity-oblivious or aware.
//
// Layout (VertexBlocks: a random vertex permutation cut into T = P/c blocks; c divides T): worker
// (b, r) holds row block b of H and of Z, whole width, as do the other c - 1 replicas (b, r'); and
// the sparse blocks A[R_b, R_k] for the stages k of replica r, S_r = [T r / c, T (r + 1) / c)
// (A^T's the same way, for backward). Stage k in S_r, inside replica r's layer (the T workers
// (*, r)): H[R_k] goes from (k, r) to every (b, r) —
//   oblivious: the whole block, a broadcast;
//   aware:     to each (b, r) only the rows of the columns where A[R_b, R_k] has an entry;
// and (b, r) adds A[R_b, R_k] H[R_k] to its partial Z. Then the c replicas of block b sum their
// partials (the replica group's all-reduce, a ring): every replica ends with Z[R_b]. Bytes per
// worker, mean over workers: runtime/plan/volumes.h OnePointFiveDVolume, exactly. Stage bytes count
// as kFeatures (forward) or kGradients (backward), the all-reduce as kAllReduce, on the grid's
// layer and replica communicators. Calls are named as blocks.h NameCall says; setup reads block b's rows
// of A and of A^T.
// Thread-compatible.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/var.h"
#include "flexgraph/tensor/csr.h"
#include "runtime/comm/process_grid.h"
#include "runtime/grid/blocks.h"

namespace fg::grid {

class Spmm15D {
 public:
  // `a_rows`, `at_rows`: this worker's block b of rows of A (n x n, rows are outputs) and of A^T,
  // as BlockRows gives them; `blocks`: P/c blocks of n.
  static absl::StatusOr<std::unique_ptr<Spmm15D>> Make(const runtime::ProcessGrid& grid, const Csr& a_rows,
                                                        const Csr& at_rows, const VertexBlocks& blocks, bool aware);
  // The same from the whole matrix `a` (on every worker).
  static absl::StatusOr<std::unique_ptr<Spmm15D>> Make(const runtime::ProcessGrid& grid, const Csr& a,
                                                        const VertexBlocks& blocks, bool aware);
  int64_t rows() const { return blocks_.Size(b_); }  // of this worker's H and Z blocks (whole width)
  absl::StatusOr<Tensor> Forward(const Tensor& h);
  absl::StatusOr<Tensor> Backward(const Tensor& g);
  // Forward as a differentiable op; a failed call leaves zeros and its error in status().
  ag::Var Apply(const ag::Var& h);
  // Apply for a trainer whose replicas each hold a share of the gradient (their sum is the true
  // one, e.g. each replica's loss over its own rows): backward first sums the gradient over the
  // replicas (one all-reduce of [rows, w]), then returns 1/c of H's gradient on each replica, so
  // that the shares again sum to the true one.
  ag::Var ApplyReplicated(const ag::Var& h);
  absl::Status status() const { return status_; }
  // Names this product's calls from `counter` (which must outlive it) instead of its own: products
  // of one grid that share a counter never share a message name.
  void ShareCallCounter(int64_t* counter) { calls_ = counter; }

 private:
  struct Operand {
    std::map<int, Csr> own;                  // k in S_r -> block (b, k) (aware, k != b: compact)
    std::vector<std::vector<int32_t>> send;  // aware: b' -> rows of my H block that (b', r) needs
  };
  Spmm15D(const runtime::ProcessGrid& grid, VertexBlocks blocks, bool aware);
  Operand Distribute(const Csr& m_rows, const Csr& mt_rows) const;  // block b's rows of M and M^T
  absl::StatusOr<Tensor> Run(const Operand& op, const Tensor& x, runtime::TrafficKind kind, bool sum_first = false);

  const runtime::ProcessGrid& grid_;
  VertexBlocks blocks_;
  bool aware_;
  int teams_, c_, b_, r_, first_, last_;  // stages [first_, last_)
  Operand a_, at_;
  int64_t own_calls_ = 0;
  int64_t* calls_ = &own_calls_;
  absl::Status status_;
};

}  // namespace fg::grid
