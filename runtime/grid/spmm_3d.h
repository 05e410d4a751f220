// The 3D distributed sparse-dense product (Split-3D-SpMM, as CAGNET and Plexus run it) on a
// pr x pc x pf grid (ProcessGrid::Make3D), forward Z = A H and backward G_H = A^T G_Z,
// sparsity-oblivious or aware.
//
// Layout (VertexBlocks: a random vertex permutation cut into pr blocks R_i; each cut again into pf
// slices R_{i,l}, slice l = positions [Lo(i) + Size(i) l / pf, Lo(i) + Size(i) (l + 1) / pf)): worker
// (i, j, l) holds H[R_{i,l}, cols j of pc] (and Z the same way), and the sparse blocks
// A[R_i, R_{k,l}] for k mod pc = j (A^T's the same way, for backward). Fibre layer l runs Spmm2D's
// stages on its slice of the inner dimension — A[R_i, R_{k,l}] broadcast along the row (i, ., l),
// H[R_{k,l}, cols j] down the column (., j, l) (aware: only the rows of the columns A[R_i, R_{k,l}]
// holds) — into a partial Z[R_i, cols j]; the fibre (i, j, .) then reduce-scatters the partials,
// each worker sending every other its slice's rows (one message each), so that (i, j, l) ends with
// Z[R_{i,l}, cols j]. Bytes per worker, mean over workers: runtime/plan/volumes.h ThreeDVolume,
// exactly. Forward bytes count as kFeatures, backward as kGradients, on the grid's row, column and
// fibre communicators. Calls are named as blocks.h NameCall says; setup reads all of A.
// Thread-compatible.
#pragma once

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

class Spmm3D {
 public:
  // `a`: n x n, rows are outputs, the same on every worker; `blocks`: pr blocks of n.
  static absl::StatusOr<std::unique_ptr<Spmm3D>> Make(const runtime::ProcessGrid& grid, const Csr& a,
                                                       const VertexBlocks& blocks, bool aware);
  // Slice l of block i: positions [SliceLo(i, l), SliceLo(i, l + 1)).
  int64_t SliceLo(int i, int l) const { return blocks_.Lo(i) + blocks_.Size(i) * l / pf_; }
  int64_t rows() const { return SliceLo(i_, l_ + 1) - SliceLo(i_, l_); }  // of this worker's H and Z
  absl::StatusOr<Tensor> Forward(const Tensor& h);
  absl::StatusOr<Tensor> Backward(const Tensor& g);
  // Forward as a differentiable op; a failed call leaves zeros and its error in status().
  ag::Var Apply(const ag::Var& h);
  absl::Status status() const { return status_; }

 private:
  struct Operand {
    std::map<int, Csr> own;                  // k mod pc = j -> A[R_i, R_{k,l}] (aware, k != i: compact)
    std::map<int, std::string> wire;         // the same, encoded
    std::vector<int64_t> cols;               // k -> columns of block k as sent
    std::vector<std::vector<int32_t>> send;  // aware: i' -> rows of my H slice that (i', j, l) needs
  };
  Spmm3D(const runtime::ProcessGrid& grid, VertexBlocks blocks, bool aware);
  Operand Distribute(const Csr& m) const;
  absl::StatusOr<Tensor> Run(const Operand& op, const Tensor& x, runtime::TrafficKind kind);

  const runtime::ProcessGrid& grid_;
  VertexBlocks blocks_;
  bool aware_;
  int pr_, pc_, pf_, i_, j_, l_;
  Operand a_, at_;
  int64_t calls_ = 0;
  absl::Status status_;
};

}  // namespace fg::grid
