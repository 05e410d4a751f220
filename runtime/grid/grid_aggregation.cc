#include "runtime/grid/grid_aggregation.h"

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/status.h"

namespace fg::grid {

GridAggregation::GridAggregation(GridSpec spec, runtime::ProcessGrid grid, VertexBlocks blocks)
    : spec_(spec), grid_(std::move(grid)), blocks_(std::move(blocks)) {}

absl::StatusOr<std::unique_ptr<GridAggregation>> GridAggregation::Make(runtime::Communicator& world,
                                                                       const GridSpec& spec, int64_t n,
                                                                       uint64_t seed) {
  FG_ASSIGN_OR_RETURN(const GridSpec s, ResolveGridSpec(spec, world.size()));
  absl::StatusOr<runtime::ProcessGrid> grid =
      s.scheme == GridScheme::kThreeD  ? runtime::ProcessGrid::Make3D(world, s.pr, s.pc, s.pf)
      : s.scheme == GridScheme::kTwoD ? runtime::ProcessGrid::Make2D(world, s.pr, s.pc)
                                      : runtime::ProcessGrid::Make15D(world, s.c);
  if (!grid.ok()) return grid.status();
  VertexBlocks blocks = VertexBlocks::Make(n, grid->rows(), seed);
  blocks.SortWithinBlocks();
  std::unique_ptr<GridAggregation> g(new GridAggregation(s, *std::move(grid), std::move(blocks)));
  const int i = g->grid_.i(), pf = g->grid_.fibres(), l = g->grid_.l();
  // As Spmm3D::SliceLo (1.5D: one slice, the block).
  auto slice_lo = [&](int layer) { return g->blocks_.Lo(i) + g->blocks_.Size(i) * layer / pf; };
  g->lo_ = slice_lo(l), g->hi_ = slice_lo(l + 1);
  const int copies = g->copies(), k = g->grid_.j();
  g->own_lo_ = g->lo_ + (g->hi_ - g->lo_) * k / copies;
  g->own_hi_ = g->lo_ + (g->hi_ - g->lo_) * (k + 1) / copies;
  if (s.scheme != GridScheme::kOnePointFiveD) g->gather_.emplace(g->grid_.row(), &g->gather_calls_);
  return g;
}

bool GridAggregation::Holds(int64_t v) const {
  const int64_t p = blocks_.position[v];
  return p >= lo_ && p < hi_;
}

bool GridAggregation::Owns(int64_t v) const {
  const int64_t p = blocks_.position[v];
  return p >= own_lo_ && p < own_hi_;
}

absl::Status GridAggregation::AddMatrix(int key, const Csr& a) {
  if (a.num_rows != blocks_.n || a.num_cols != blocks_.n) {
    return absl::InvalidArgumentError(absl::StrCat("grid aggregation: a ", a.num_rows, " x ", a.num_cols,
                                                   " matrix over ", blocks_.n, " vertices"));
  }
  Product p;
  if (spec_.scheme == GridScheme::kOnePointFiveD) {
    FG_ASSIGN_OR_RETURN(p.one_five_d, Spmm15D::Make(grid_, a, blocks_, spec_.aware));
    p.one_five_d->ShareCallCounter(&product_calls_);
  } else {
    FG_ASSIGN_OR_RETURN(p.two_d, Spmm3D::Make(grid_, a, blocks_, spec_.aware));
    p.two_d->ShareCallCounter(&product_calls_);
  }
  products_[key] = std::move(p);
  return absl::OkStatus();
}

ag::Var GridAggregation::Aggregate(int key, const ag::Var& m) {
  Product& p = products_.at(key);
  if (p.one_five_d) return p.one_five_d->ApplyReplicated(m);
  // This worker's columns, their product, gathered back to whole rows along the grid row.
  const int64_t w = m.row_width(), pc = grid_.columns(), j = grid_.j();
  const int64_t c0 = ColumnLo(w, pc, j), cw = ColumnLo(w, pc, j + 1) - c0;
  std::vector<int64_t> widths;  // the pieces before, at and after this worker's columns (none empty)
  if (c0 > 0) widths.push_back(c0);
  widths.push_back(cw);
  if (w - c0 - cw > 0) widths.push_back(w - c0 - cw);
  const ag::Var mine = widths.size() == 1 ? m : ag::Split(m, widths)[c0 > 0 ? 1 : 0];
  absl::StatusOr<ag::Var> z = (*gather_)(p.two_d->Apply(mine), w);
  if (!z.ok()) {
    if (status_.ok()) status_ = z.status();
    return ag::Var(Tensor::Zeros({m.rows(), w}));
  }
  return *z;
}

absl::Status GridAggregation::status() const {
  FG_RETURN_IF_ERROR(status_);
  if (gather_) FG_RETURN_IF_ERROR(gather_->status());
  for (const auto& [key, p] : products_) {
    FG_RETURN_IF_ERROR(p.one_five_d ? p.one_five_d->status() : p.two_d->status());
  }
  return absl::OkStatus();
}

}  // namespace fg::grid
