// A trainer's neighbourhood aggregations over a process grid (CAGNET 1.5D, 2D, 3D): the grid and
// its vertex blocks (a random permutation, each block's vertices then in id order), which rows
// each worker holds, and Z = A M for the weighted adjacencies a model aggregates over.
//
// Rows: worker (i, j[, l]) holds the whole rows of block i (3D: of slice l of block i); the
// workers holding one block (2D, 3D: the grid row's pc; 1.5D: the c replicas) are its copies, and
// each owns a disjoint 1/copies share of its rows, so that every vertex has exactly one owner.
// Dense layers run on the held rows on every copy; a task reads only the owned ones.
// Gradients: the copies of a row may each carry a share of its gradient (their sum is the true
// one); Aggregate's backward takes such shares and returns such shares for M.
// Every call is collective over the run, in the same order on every worker. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/var.h"
#include "flexgraph/tensor/csr.h"
#include "runtime/comm/process_grid.h"
#include "runtime/grid/blocks.h"
#include "runtime/grid/grid_spec.h"
#include "runtime/grid/row_gather.h"
#include "runtime/grid/spmm_15d.h"
#include "runtime/grid/spmm_3d.h"

namespace fg::grid {

class GridAggregation {
 public:
  // `spec` resolved for world.size() workers (ResolveGridSpec); n vertices; the blocks' random
  // permutation from `seed`, or with `bounds` (one more than the grid's row blocks, from 0 to n)
  // the id ranges they name (a partitioned dataset's parts). Collective (builds the grid's
  // sub-communicators).
  static absl::StatusOr<std::unique_ptr<GridAggregation>> Make(runtime::Communicator& world, const GridSpec& spec,
                                                               int64_t n, uint64_t seed,
                                                               std::vector<int64_t> bounds = {});
  const GridSpec& spec() const { return spec_; }
  int copies() const { return grid_.columns(); }
  bool Holds(int64_t v) const;
  bool Owns(int64_t v) const;

  // The product for A (n x n, rows are outputs) under `key`, replacing any earlier one of that key
  // (a selection drawn again), from this worker's rows of A: row k of `rows` is vertex row_ids[k]
  // (int64, every owned vertex among them), columns are vertex ids. Collective: each owner sends
  // its rows' entries to the workers of the row's block (A's rows) and of each column's block
  // (A^T's rows), so that no worker needs more of A than its block's in- and out-edges.
  absl::Status AddMatrix(int key, const Tensor& row_ids, const Csr& rows);
  bool HasMatrix(int key) const { return products_.count(key) > 0; }
  // Z = A M over the held rows ([held, w] in id order, whole rows, both), differentiable.
  ag::Var Aggregate(int key, const ag::Var& m);
  // The first error of any call or backward so far.
  absl::Status status() const;

 private:
  struct Product {
    std::unique_ptr<Spmm3D> two_d;  // 2D and 3D
    std::unique_ptr<Spmm15D> one_five_d;
  };
  GridAggregation(runtime::Communicator& world, GridSpec spec, runtime::ProcessGrid grid, VertexBlocks blocks);

  runtime::Communicator& world_;
  GridSpec spec_;
  runtime::ProcessGrid grid_;
  VertexBlocks blocks_;
  int64_t lo_ = 0, hi_ = 0;          // held positions [lo_, hi_)
  int64_t own_lo_ = 0, own_hi_ = 0;  // owned positions
  std::map<int, Product> products_;
  int64_t product_calls_ = 0, gather_calls_ = 0;
  std::optional<RowGather> gather_;
  absl::Status status_;
};

}  // namespace fg::grid
