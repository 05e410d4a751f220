// The 2D (SUMMA) distributed sparse-dense product of CAGNET on a pr x pc process grid, forward
// Z = A H and backward G_H = A^T G_Z, each sparsity-oblivious or sparsity-aware.
//
// Layout (VertexBlocks: a random vertex permutation cut into pr blocks R_0..R_{pr-1}): worker (i, j)
// holds the dense row block i of H (and of Z), feature columns block j of pc (ColumnLo), and the
// sparse blocks A[R_i, R_k] for k with k mod pc = j (A^T's the same way, for backward). Stage
// k = 0..pr-1: A[R_i, R_k] is broadcast along grid row i from (i, k mod pc) as a sparse block
// (blocks.h: 4 bytes per row, 8 per entry); H[R_k, cols j] goes down grid column j from (k, j):
//   oblivious: the whole block, a broadcast;
//   aware:     to each (i, j) only the rows of the columns where A[R_i, R_k] has an entry (one
//              message each; none when there are none), A's off-diagonal blocks carried over those
//              columns only.
// and (i, j) adds A[R_i, R_k] H[R_k, cols j] to its Z block. Bytes per worker, mean over workers:
// runtime/plan/volumes.h TwoDVolume, exactly (tests/runtime/grid). Forward bytes count as
// TrafficKind::kFeatures, backward as kGradients, on the grid's row and column communicators.
//
// Every worker builds its blocks from the whole matrix (setup reads all of A; a worker keeps its own
// blocks and, aware, the row lists it sends). Calls are collective over the grid, in the same order
// on every worker; their messages are named by a call counter (blocks.h NameCall; phase 15,
// rounds 1 and 3, kinds features and gradients) on the grid's groups. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/var.h"
#include "flexgraph/tensor/csr.h"
#include "runtime/comm/process_grid.h"
#include "runtime/grid/blocks.h"

namespace fg::grid {

class Spmm2D {
 public:
  // `a`: n x n, rows are outputs (Z = A H), the same on every worker; `blocks`: pr blocks of n.
  static absl::StatusOr<std::unique_ptr<Spmm2D>> Make(const runtime::ProcessGrid& grid, const Csr& a,
                                                       const VertexBlocks& blocks, bool aware);
  int64_t rows() const { return blocks_.Size(i_); }  // of this worker's H and Z blocks
  int64_t ColumnLo(int64_t width) const { return grid::ColumnLo(width, pc_, j_); }
  int64_t Columns(int64_t width) const { return grid::ColumnLo(width, pc_, j_ + 1) - ColumnLo(width); }

  // This worker's block of A H (h: its block of H, rows() x Columns(width)).
  absl::StatusOr<Tensor> Forward(const Tensor& h);
  // This worker's block of A^T g.
  absl::StatusOr<Tensor> Backward(const Tensor& g);
  // Forward as a differentiable op (its gradient is Backward). A failed call leaves zeros and its
  // error in status().
  ag::Var Apply(const ag::Var& h);
  absl::Status status() const { return status_; }

 private:
  // One matrix (A or A^T) as this worker uses it.
  struct Operand {
    std::map<int, Csr> own;            // k -> block (i, k) for k mod pc = j (aware, k != i: compact)
    std::map<int, std::string> wire;   // the same, encoded
    std::vector<int64_t> cols;         // k -> columns of block (i, k) as sent (aware, k != i: touched)
    std::vector<std::vector<int32_t>> send;  // aware: i' -> rows of my H block that (i', j) needs
  };
  Spmm2D(const runtime::ProcessGrid& grid, VertexBlocks blocks, bool aware);
  Operand Distribute(const Csr& m) const;
  absl::StatusOr<Tensor> Run(const Operand& op, const Tensor& x, runtime::TrafficKind kind);

  const runtime::ProcessGrid& grid_;
  VertexBlocks blocks_;
  bool aware_;
  int pr_, pc_, i_, j_;
  Operand a_, at_;
  int64_t calls_ = 0;
  absl::Status status_;
};

}  // namespace fg::grid
