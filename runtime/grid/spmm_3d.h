// The SUMMA-style distributed sparse-dense products of CAGNET on a pr x pc (2D) or pr x pc x pf (3D,
// Split-3D-SpMM as Plexus scales it) grid (ProcessGrid::Make2D / Make3D), forward Z = A H and
// backward G_H = A^T G_Z, each sparsity-oblivious or sparsity-aware. A 2D grid is a 3D grid with one
// fibre layer (spmm_2d.h: Spmm2D is this class).
//
// Layout (VertexBlocks: a random vertex permutation cut into pr blocks R_i, each cut again into pf
// slices R_{i,l} = positions [SliceLo(i, l), SliceLo(i, l + 1)); in 2D R_{i,0} = R_i): worker
// (i, j, l) holds H[R_{i,l}, cols j of pc] (blocks.h ColumnLo), Z the same way, and the sparse blocks
// A[R_i, R_{k,l}] for k mod pc = j (A^T's the same way, for backward). Fibre layer l runs pr stages
// on its slice of the inner dimension; stage k:
//   A[R_i, R_{k,l}] is broadcast along the grid row (i, ., l) from (i, k mod pc, l), as a sparse
//   block (blocks.h: 4 bytes per row, 8 per entry);
//   H[R_{k,l}, cols j] goes down the grid column (., j, l) from (k, j, l) — oblivious: the whole
//   slice, a broadcast; aware: to each (i, j, l) only the rows of the columns where A[R_i, R_{k,l}]
//   has an entry (one message each, none when there are none), A's off-diagonal blocks carried
//   over those columns only;
//   (i, j, l) adds A[R_i, R_{k,l}] H[R_{k,l}, cols j] to its partial Z[R_i, cols j].
// 3D then reduce-scatters the partials over the fibre (i, j, .): each worker sends every other its
// slice's rows (one message each), so that (i, j, l) ends with Z[R_{i,l}, cols j].
// Bytes per worker, mean over workers: runtime/plan/volumes.h TwoDVolume / ThreeDVolume, exactly
// (tests/runtime/grid). Forward bytes count as TrafficKind::kFeatures, backward as kGradients, on
// the grid's row, column and fibre communicators.
//
// A worker builds its blocks from block i's rows of A and of A^T (runtime/grid/grid_aggregation.h
// gathers them from the rows' owners) and keeps its own blocks and, aware, the row lists it sends. Calls are collective over the grid, in the same order
// on every worker; their messages are named by a call counter (blocks.h NameCall; phase 15, rounds
// 1 and 3) on the grid's groups. Thread-compatible.
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
  // `a_rows`, `at_rows`: this worker's block i of rows of A (n x n, rows are outputs: Z = A H)
  // and of A^T, as BlockRows gives them; `blocks`: pr blocks of n.
  static absl::StatusOr<std::unique_ptr<Spmm3D>> Make(const runtime::ProcessGrid& grid, const Csr& a_rows,
                                                       const Csr& at_rows, const VertexBlocks& blocks, bool aware);
  // The same from the whole matrix `a` (on every worker).
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
  // Names this product's calls from `counter` (which must outlive it) instead of its own: products
  // of one grid that share a counter never share a message name.
  void ShareCallCounter(int64_t* counter) { calls_ = counter; }

 private:
  struct Operand {
    std::map<int, Csr> own;                  // k mod pc = j -> A[R_i, R_{k,l}] (aware, k != i: compact)
    std::map<int, std::string> wire;         // the same, encoded
    std::vector<int64_t> cols;               // k -> columns of block k as sent
    std::vector<std::vector<int32_t>> send;  // aware: i' -> rows of my H slice that (i', j, l) needs
  };
  Spmm3D(const runtime::ProcessGrid& grid, VertexBlocks blocks, bool aware);
  Operand Distribute(const Csr& m_rows, const Csr& mt_rows) const;  // block i's rows of M and M^T
  absl::StatusOr<Tensor> Run(const Operand& op, const Tensor& x, runtime::TrafficKind kind);

  const runtime::ProcessGrid& grid_;
  VertexBlocks blocks_;
  bool aware_;
  int pr_, pc_, pf_, i_, j_, l_;
  Operand a_, at_;
  int64_t own_calls_ = 0;
  int64_t* calls_ = &own_calls_;
  absl::Status status_;
};

}  // namespace fg::grid
