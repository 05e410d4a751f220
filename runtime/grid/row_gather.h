// The grid row's all-gather of column blocks as a differentiable op (2D and 3D grids, whose
// workers hold column blocks of a dense operand): each member sends its [rows, w_j] block to every
// other member and places theirs at their columns (blocks.h ColumnLo) of [rows, w]; backward is the
// reduce-scatter: each member sends every other member that member's columns of its gradient and
// keeps the sum of its own columns. Per call each member sends (pc - 1) of its blocks forward and
// rows x (w - w_j) floats backward. Calls are collective over the row, named by the shared counter
// `calls` (blocks.h NameCall). A failed call leaves its error in status(). Thread-compatible.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "flexgraph/autograd/var.h"
#include "runtime/comm/communicator.h"

namespace fg::grid {

class RowGather {
 public:
  RowGather(runtime::Communicator& row, int64_t* calls) : row_(row), calls_(calls) {}
  // x: this member's [rows, w_j] columns of a `width`-wide operand.
  absl::StatusOr<ag::Var> operator()(const ag::Var& x, int64_t width);
  absl::Status status() const { return status_; }

 private:
  absl::StatusOr<Tensor> ReduceScatter(const Tensor& g, int64_t width, int64_t rows);
  runtime::Communicator& row_;
  int64_t* calls_;
  absl::Status status_;
};

}  // namespace fg::grid
