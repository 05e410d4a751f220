// The grid row's all-gather of column blocks as a differentiable op (2D and 3D grids, whose
// workers hold column blocks of a dense operand): each member's [rows, w_j] block placed at its
// columns (blocks.h ColumnLo) of a zero [rows, w] buffer, summed over the row (a ring all-reduce);
// backward sums the members' gradients the same way and keeps this member's columns. Calls are
// collective over the row, named by the shared counter `calls` (blocks.h NameCall). A failed call
// leaves its error in status(). Thread-compatible.
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
  absl::Status Sum(Tensor* t);
  runtime::Communicator& row_;
  int64_t* calls_;
  absl::Status status_;
};

}  // namespace fg::grid
