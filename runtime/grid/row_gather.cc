#include "runtime/grid/row_gather.h"

#include <cstring>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/status.h"
#include "runtime/grid/blocks.h"

namespace fg::grid {

absl::StatusOr<ag::Var> RowGather::operator()(const ag::Var& x, int64_t width) {
  const int pc = row_.size(), j = row_.rank();
  const int64_t lo = ColumnLo(width, pc, j), w = x.row_width(), rows = x.rows();
  Tensor full = Tensor::Zeros({rows, width});
  for (int64_t r = 0; r < rows; ++r) std::memcpy(full.f32() + r * width + lo, x.value().f32() + r * w, w * sizeof(float));
  FG_RETURN_IF_ERROR(Sum(&full));
  return ag::MakeResult(std::move(full), "grid_row_gather", {x},
                        [this, xr = ag::GradRef(x), lo, w, width, rows](const Tensor& g) {
                          Tensor sum = g.Clone();
                          if (absl::Status s = Sum(&sum); !s.ok()) {
                            if (status_.ok()) status_ = s;
                            return;
                          }
                          Tensor mine = Tensor::Empty({rows, w});
                          for (int64_t r = 0; r < rows; ++r) {
                            std::memcpy(mine.f32() + r * w, sum.f32() + r * width + lo, w * sizeof(float));
                          }
                          ag::AccumulateGrad(xr, mine, "grid_row_gather");
                        });
}

absl::Status RowGather::Sum(Tensor* t) {
  const CallName name = NameCall((*calls_)++, 1);
  return row_.AllReduce(t->f32(), t->numel(), name.epoch, name.first);
}

}  // namespace fg::grid
