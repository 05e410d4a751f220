#include "runtime/grid/grid_gcn.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/status.h"
#include "runtime/comm/process_grid.h"
#include "runtime/grid/row_gather.h"
#include "runtime/grid/spmm_15d.h"
#include "runtime/grid/spmm_3d.h"

namespace fg::grid {
namespace {

using runtime::Communicator;

constexpr int kStepGradients = kGridSteps, kStepLoss = kGridSteps + 1;

// Rows of `x` at positions [lo, hi) of `blocks`' order, columns [c0, c0 + cols).
Tensor LocalBlock(const Tensor& x, const VertexBlocks& blocks, int64_t lo, int64_t hi, int64_t c0, int64_t cols) {
  const int64_t w = x.row_width(), rows = hi - lo;
  Tensor t = Tensor::Empty({rows, cols});
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(t.f32() + r * cols, x.f32() + blocks.order[lo + r] * w + c0, cols * sizeof(float));
  }
  return t;
}

}  // namespace

Csr GcnNormalized(const Csr& in_edges) {
  const int64_t n = in_edges.num_rows;
  std::vector<double> d(n, 1.0);
  in_edges.VisitIndices([&](const auto* col) {
    for (int64_t v = 0; v < n; ++v) {
      for (int64_t e = in_edges.row_ptr()[v]; e < in_edges.row_ptr()[v + 1]; ++e) d[v] += col[e] != v ? 1.0 : 0.0;
    }
  });
  std::vector<int64_t> offsets = {0};
  std::vector<int32_t> cols;
  std::vector<float> vals;
  in_edges.VisitIndices([&](const auto* col) {
    for (int64_t v = 0; v < n; ++v) {
      for (int64_t e = in_edges.row_ptr()[v]; e < in_edges.row_ptr()[v + 1]; ++e) {
        const int64_t u = col[e];
        if (u == v) continue;
        cols.push_back(static_cast<int32_t>(u));
        vals.push_back(static_cast<float>(1.0 / std::sqrt(d[v] * d[u])));
      }
      cols.push_back(static_cast<int32_t>(v));
      vals.push_back(static_cast<float>(1.0 / d[v]));
      offsets.push_back(static_cast<int64_t>(cols.size()));
    }
  });
  return Csr::FromVectors(n, n, offsets, cols, vals);
}

absl::StatusOr<std::vector<double>> TrainGridGcn(Communicator& world, const GcnProblem& p, const GridGcnOptions& o) {
  // 2D and 3D hold column blocks of the dense operands (gathered along the grid row for the dense
  // products); 1.5D whole rows.
  const bool two_d = o.scheme != GridScheme::kOnePointFiveD, three_d = o.scheme == GridScheme::kThreeD;
  FG_ASSIGN_OR_RETURN(runtime::ProcessGrid grid,
                      three_d ? runtime::ProcessGrid::Make3D(world, o.pr, o.pc, o.pf)
                      : two_d ? runtime::ProcessGrid::Make2D(world, o.pr, o.pc)
                              : runtime::ProcessGrid::Make15D(world, o.c));
  const int64_t n = p.a.num_rows, f = p.features.row_width();
  const VertexBlocks blocks = VertexBlocks::Make(n, grid.rows(), o.permutation_seed);
  const int copies = grid.columns();  // of each row's loss: 2D and 3D pc, 1.5D c
  std::unique_ptr<Spmm15D> spmm15d;
  std::unique_ptr<Spmm3D> spmm3d;  // 2D: one fibre layer
  int64_t lo = blocks.Lo(grid.i()), hi = blocks.Lo(grid.i() + 1);  // this worker's rows (positions)
  if (two_d) {
    FG_ASSIGN_OR_RETURN(spmm3d, Spmm3D::Make(grid, p.a, blocks, o.aware));
    lo = spmm3d->SliceLo(grid.i(), grid.l()), hi = spmm3d->SliceLo(grid.i(), grid.l() + 1);
  } else {
    FG_ASSIGN_OR_RETURN(spmm15d, Spmm15D::Make(grid, p.a, blocks, o.aware));
  }
  int64_t gathers = 0;
  RowGather gather(grid.row(), &gathers);
  // Aggregation: this worker's block of A x, gathered to whole rows (2D) or whole already (1.5D).
  auto aggregate = [&](const ag::Var& x, int64_t width) -> absl::StatusOr<ag::Var> {
    if (!two_d) return spmm15d->Apply(x);
    return gather(spmm3d->Apply(x), width);
  };
  // Columns of a width-w operand this worker holds (2D: block j; 1.5D: all).
  auto columns = [&](int64_t w) -> std::pair<int64_t, int64_t> {
    if (!two_d) return {0, w};
    return {ColumnLo(w, grid.columns(), grid.j()), ColumnLo(w, grid.columns(), grid.j() + 1) - ColumnLo(w, grid.columns(), grid.j())};
  };
  const auto [f0, fw] = columns(f);
  const ag::Var x(LocalBlock(p.features, blocks, lo, hi, f0, fw));
  // This block's training rows and labels; the loss weight of this copy.
  std::vector<int32_t> rows;
  const int64_t* train = p.train.i64();
  for (int64_t t = 0; t < p.train.numel(); ++t) {
    const int64_t pos = blocks.position[train[t]];
    if (pos >= lo && pos < hi) rows.push_back(static_cast<int32_t>(pos - lo));
  }
  std::vector<int64_t> labels(hi - lo);
  for (int64_t r = 0; r < hi - lo; ++r) labels[r] = p.labels.i64()[blocks.order[lo + r]];
  const Tensor label_t = Tensor::FromVector(labels), rows_t = Tensor::FromVector(rows);
  const float weight = static_cast<float>(rows.size()) / static_cast<float>(p.train.numel()) / static_cast<float>(copies);

  ag::Var w1 = ag::Var::Parameter(p.w1.Clone()), w2 = ag::Var::Parameter(p.w2.Clone());
  const int64_t hidden = p.w1.row_width();
  std::vector<double> losses;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    w1.ZeroGrad();
    w2.ZeroGrad();
    FG_ASSIGN_OR_RETURN(ag::Var z1, aggregate(x, f));
    ag::Var h1 = ag::Relu(ag::MatMul(z1, w1));
    if (two_d) {
      const auto [h0, hw] = columns(hidden);
      std::vector<int64_t> widths;  // the pieces before, at and after this worker's columns (none empty)
      if (h0 > 0) widths.push_back(h0);
      widths.push_back(hw);
      if (hidden - h0 - hw > 0) widths.push_back(hidden - h0 - hw);
      h1 = ag::Split(h1, widths)[h0 > 0 ? 1 : 0];
    }
    FG_ASSIGN_OR_RETURN(ag::Var z2, aggregate(h1, hidden));
    ag::Var logits = ag::MatMul(z2, w2);
    ag::Var loss = rows.empty() ? ag::Scale(ag::Sum(logits), 0.0f)
                                : ag::Scale(ag::NllLoss(ag::LogSoftmax(logits), label_t, rows_t), weight);
    std::vector<double> total = {static_cast<double>(loss.value().f32()[0])};
    loss.Backward();
    FG_RETURN_IF_ERROR(two_d ? spmm3d->status() : spmm15d->status());
    FG_RETURN_IF_ERROR(gather.status());
    FG_RETURN_IF_ERROR(world.AllReduce(&total, epoch, kStepLoss));
    losses.push_back(total[0]);
    // The weights' gradients summed over the run, one buffer; the same step everywhere.
    const int64_t n1 = p.w1.numel(), n2 = p.w2.numel();
    std::vector<float> g(n1 + n2, 0.0f);
    if (w1.grad().defined()) std::memcpy(g.data(), w1.grad().f32(), n1 * sizeof(float));
    if (w2.grad().defined()) std::memcpy(g.data() + n1, w2.grad().f32(), n2 * sizeof(float));
    FG_RETURN_IF_ERROR(world.AllReduce(g.data(), n1 + n2, epoch, kStepGradients));
    for (int64_t k = 0; k < n1; ++k) w1.mutable_value().f32()[k] -= o.lr * g[k];
    for (int64_t k = 0; k < n2; ++k) w2.mutable_value().f32()[k] -= o.lr * g[n1 + k];
  }
  return losses;
}

}  // namespace fg::grid
