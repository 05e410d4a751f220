#include "runtime/grid/grid_aggregation.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/status.h"

namespace fg::grid {
namespace {

// AddMatrix's all-to-alls: phase and round of the products' row messages (spmm_3d.cc), under a
// call name of their own.
constexpr int kPhaseSetup = 15, kRoundSetup = 3;

}  // namespace

GridAggregation::GridAggregation(runtime::Communicator& world, GridSpec spec, runtime::ProcessGrid grid,
                                 VertexBlocks blocks)
    : world_(world), spec_(spec), grid_(std::move(grid)), blocks_(std::move(blocks)) {}

absl::StatusOr<std::unique_ptr<GridAggregation>> GridAggregation::Make(runtime::Communicator& world,
                                                                       const GridSpec& spec, int64_t n,
                                                                       uint64_t seed, std::vector<int64_t> bounds) {
  FG_ASSIGN_OR_RETURN(const GridSpec s, ResolveGridSpec(spec, world.size()));
  absl::StatusOr<runtime::ProcessGrid> grid =
      s.scheme == GridScheme::kThreeD  ? runtime::ProcessGrid::Make3D(world, s.pr, s.pc, s.pf)
      : s.scheme == GridScheme::kTwoD ? runtime::ProcessGrid::Make2D(world, s.pr, s.pc)
                                      : runtime::ProcessGrid::Make15D(world, s.c);
  if (!grid.ok()) return grid.status();
  if (!bounds.empty() && (static_cast<int>(bounds.size()) != grid->rows() + 1 || bounds.front() != 0 ||
                          bounds.back() != n || !std::is_sorted(bounds.begin(), bounds.end()))) {
    return absl::InvalidArgumentError(absl::StrCat("grid aggregation: ", bounds.size() - 1, " parts for the ",
                                                   grid->rows(), " row blocks of ", DescribeGrid(s),
                                                   " (or bounds not ascending from 0 to ", n, ")"));
  }
  VertexBlocks blocks = bounds.empty() ? VertexBlocks::Make(n, grid->rows(), seed) : VertexBlocks::FromBounds(bounds);
  blocks.SortWithinBlocks();
  std::unique_ptr<GridAggregation> g(new GridAggregation(world, s, *std::move(grid), std::move(blocks)));
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

absl::Status GridAggregation::AddMatrix(int key, const Tensor& row_ids, const Csr& rows) {
  // A worker with bad rows still takes part in the all-to-alls (sending nothing), then fails.
  const int64_t n = blocks_.n;
  absl::Status mine;
  int64_t owned = 0;
  if (rows.num_rows != row_ids.numel() || rows.num_cols != n) {
    mine = absl::InvalidArgumentError(absl::StrCat("grid aggregation: ", rows.num_rows, " x ", rows.num_cols,
                                                   " rows of a matrix for ", row_ids.numel(), " vertices of ", n));
  } else {
    for (int64_t k = 0; mine.ok() && k < row_ids.numel(); ++k) {
      const int64_t v = row_ids.i64()[k];
      if (v < 0 || v >= n) mine = absl::InvalidArgumentError(absl::StrCat("grid aggregation: row of vertex ", v, " of ", n));
      owned += mine.ok() && Owns(v) ? 1 : 0;
    }
  }
  if (mine.ok() && owned != own_hi_ - own_lo_) {
    mine = absl::InvalidArgumentError(absl::StrCat("grid aggregation: worker ", world_.rank(), " gave ", owned,
                                                   " of its ", own_hi_ - own_lo_, " owned rows"));
  }
  // Entries as (row position, column position, weight), A's and A^T's, to each worker of the block.
  const int P = world_.size();
  std::vector<std::string> to_a(P), to_at(P);
  auto workers_of = [&](int b, const auto& visit) {
    for (int j = 0; j < grid_.columns(); ++j) {
      for (int l = 0; l < grid_.fibres(); ++l) visit(grid_.RankOf(b, j, l));
    }
  };
  const int32_t* col = rows.nnz() > 0 ? rows.col() : nullptr;
  for (int64_t k = 0; mine.ok() && k < rows.num_rows; ++k) {
    const int64_t v = row_ids.i64()[k];
    if (!Owns(v)) continue;
    const int32_t pr = static_cast<int32_t>(blocks_.position[v]);
    const int br = blocks_.BlockOf(pr);
    for (int64_t e = rows.row_ptr()[k]; e < rows.row_ptr()[k + 1]; ++e) {
      if (col[e] < 0 || col[e] >= n) {
        mine = absl::InvalidArgumentError(absl::StrCat("grid aggregation: the row of vertex ", v, " names vertex ",
                                                       col[e], " of ", n));
        to_a.assign(P, ""), to_at.assign(P, "");
        break;
      }
      const int32_t pc = static_cast<int32_t>(blocks_.position[col[e]]);
      const float w = rows.val() != nullptr ? rows.val()[e] : 1.0f;
      workers_of(br, [&](int q) { AppendEntry(&to_a[q], pr, pc, w); });
      workers_of(blocks_.BlockOf(pc), [&](int q) { AppendEntry(&to_at[q], pc, pr, w); });
    }
  }
  const CallName name = NameCall(product_calls_++, 2);
  using runtime::TrafficKind;
  FG_ASSIGN_OR_RETURN(std::vector<std::string> got_a,
                      world_.AllToAllV(std::move(to_a), runtime::MakeTag(name.epoch, 0, kPhaseSetup,
                                                                         TrafficKind::kSetup, name.first, kRoundSetup)));
  FG_ASSIGN_OR_RETURN(std::vector<std::string> got_at,
                      world_.AllToAllV(std::move(to_at), runtime::MakeTag(name.epoch, 0, kPhaseSetup,
                                                                          TrafficKind::kSetup, name.first + 1, kRoundSetup)));
  FG_RETURN_IF_ERROR(mine);
  FG_ASSIGN_OR_RETURN(const Csr a_rows, DecodeBlockRows(got_a, blocks_, grid_.i()));
  FG_ASSIGN_OR_RETURN(const Csr at_rows, DecodeBlockRows(got_at, blocks_, grid_.i()));
  Product p;
  if (spec_.scheme == GridScheme::kOnePointFiveD) {
    FG_ASSIGN_OR_RETURN(p.one_five_d, Spmm15D::Make(grid_, a_rows, at_rows, blocks_, spec_.aware));
    p.one_five_d->ShareCallCounter(&product_calls_);
  } else {
    FG_ASSIGN_OR_RETURN(p.two_d, Spmm3D::Make(grid_, a_rows, at_rows, blocks_, spec_.aware));
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
