#include "runtime/grid/spmm_15d.h"

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/ops/ops.h"

namespace fg::grid {
namespace {

using runtime::Communicator;
using runtime::TrafficKind;

constexpr int kPhaseSmall = 15, kRoundRows = 3;  // as spmm_3d.cc

}  // namespace

Spmm15D::Spmm15D(const runtime::ProcessGrid& grid, VertexBlocks blocks, bool aware)
    : grid_(grid), blocks_(std::move(blocks)), aware_(aware), teams_(grid.rows()), c_(grid.columns()),
      b_(grid.i()), r_(grid.j()), first_(teams_ * r_ / c_), last_(teams_ * (r_ + 1) / c_) {}

absl::StatusOr<std::unique_ptr<Spmm15D>> Spmm15D::Make(const runtime::ProcessGrid& grid, const Csr& a,
                                                       const VertexBlocks& blocks, bool aware) {
  if (a.num_rows != blocks.n || a.num_cols != blocks.n || blocks.blocks != grid.rows()) {
    return absl::InvalidArgumentError(absl::StrCat("Spmm15D: ", blocks.blocks, " blocks of ", blocks.n,
                                                   " vertices for a grid of ", grid.rows(), " blocks and a ",
                                                   a.num_rows, " x ", a.num_cols, " matrix"));
  }
  return Make(grid, BlockRows(a, blocks, grid.i()), BlockRows(a.Transpose(), blocks, grid.i()), blocks, aware);
}

absl::StatusOr<std::unique_ptr<Spmm15D>> Spmm15D::Make(const runtime::ProcessGrid& grid, const Csr& a_rows,
                                                       const Csr& at_rows, const VertexBlocks& blocks, bool aware) {
  if (grid.fibres() != 1 || grid.rows() % grid.columns() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("Spmm15D: replication c=", grid.columns(), " must divide the ",
                                                   grid.rows(), " blocks (c^2 divides P)"));
  }
  if (blocks.blocks != grid.rows() || a_rows.num_rows != blocks.Size(grid.i()) || a_rows.num_cols != blocks.n ||
      at_rows.num_rows != a_rows.num_rows || at_rows.num_cols != blocks.n) {
    return absl::InvalidArgumentError(absl::StrCat("Spmm15D: ", blocks.blocks, " blocks of ", blocks.n,
                                                   " vertices for a grid of ", grid.rows(), " blocks; block ",
                                                   grid.i(), "'s rows of A ", a_rows.num_rows, " x ", a_rows.num_cols,
                                                   " and of A^T ", at_rows.num_rows, " x ", at_rows.num_cols));
  }
  std::unique_ptr<Spmm15D> s(new Spmm15D(grid, blocks, aware));
  s->a_ = s->Distribute(a_rows, at_rows);
  s->at_ = s->Distribute(at_rows, a_rows);
  return s;
}

Spmm15D::Operand Spmm15D::Distribute(const Csr& m_rows, const Csr& mt_rows) const {
  Operand op;
  std::vector<bool> stages(teams_, false);
  for (int k = first_; k < last_; ++k) stages[k] = true;
  std::vector<Csr> row = SplitColumnBlocks(m_rows, blocks_, stages);
  for (int k = first_; k < last_; ++k) {
    if (aware_ && k != b_) {
      TouchedColumns(row[k], &op.own[k]);
    } else {
      op.own[k] = row[k];
    }
  }
  if (aware_) {  // as the root of stage b (when b is in S_r): what each (b', r) needs of my block
    op.send.resize(teams_);
    if (b_ >= first_ && b_ < last_) {
      op.send = RowsReaching(mt_rows, blocks_, 0, blocks_.Size(b_));
      op.send[b_].clear();
    }
  }
  return op;
}

absl::StatusOr<Tensor> Spmm15D::Run(const Operand& op, const Tensor& in, TrafficKind kind, bool sum_first) {
  const int64_t w = in.row_width();
  Tensor x = in;
  if (x.rows() != rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Spmm15D on grid worker (", b_, ", ", r_, "): ", x.rows(), " rows, expected ", rows()));
  }
  Communicator& layer = grid_.layer();
  // Stages, the replicas' all-reduce of the partial sums, and the one that sums x first.
  const CallName name = NameCall((*calls_)++, teams_ / c_ + 2);
  if (sum_first) {
    x = in.Clone();
    FG_RETURN_IF_ERROR(grid_.replicas().AllReduce(x.f32(), x.numel(), name.epoch, name.first + teams_ / c_ + 1));
  }
  Tensor z = Tensor::Zeros({rows(), w});
  for (int k = first_; k < last_; ++k) {
    const int step = name.first + (k - first_);
    const Csr& block = op.own.at(k);
    Tensor h;
    if (k == b_) {
      h = x;
      if (!aware_) {
        std::string bytes = runtime::FloatsToBytes(x.f32(), x.numel());
        FG_RETURN_IF_ERROR(layer.Broadcast(&bytes, k, name.epoch, step, kind));
      } else {
        const uint64_t tag = runtime::MakeTag(name.epoch, 0, kPhaseSmall, kind, step, kRoundRows);
        for (int other = 0; other < teams_; ++other) {
          if (other != k && !op.send[other].empty()) layer.Send(other, tag, GatherRowBytes(x, op.send[other]));
        }
      }
    } else if (!aware_) {
      std::string bytes;
      FG_RETURN_IF_ERROR(layer.Broadcast(&bytes, k, name.epoch, step, kind));
      FG_ASSIGN_OR_RETURN(h, BytesToTensor(bytes, blocks_.Size(k), w, grid_.RankOf(k, r_)));
    } else if (block.num_cols > 0) {
      const uint64_t tag = runtime::MakeTag(name.epoch, 0, kPhaseSmall, kind, step, kRoundRows);
      FG_ASSIGN_OR_RETURN(std::string bytes, layer.Recv(k, tag));
      FG_ASSIGN_OR_RETURN(h, BytesToTensor(bytes, block.num_cols, w, grid_.RankOf(k, r_)));
    }
    if (block.nnz() > 0) ops::AddInPlace(&z, ops::Spmm(block, h, ops::SpmmReduce::kSum));
  }
  FG_RETURN_IF_ERROR(grid_.replicas().AllReduce(z.f32(), z.numel(), name.epoch, name.first + teams_ / c_));
  if (sum_first) z = ops::Scale(z, 1.0f / static_cast<float>(c_));
  return z;
}

absl::StatusOr<Tensor> Spmm15D::Forward(const Tensor& h) { return Run(a_, h, TrafficKind::kFeatures); }

absl::StatusOr<Tensor> Spmm15D::Backward(const Tensor& g) { return Run(at_, g, TrafficKind::kGradients); }

ag::Var Spmm15D::Apply(const ag::Var& h) {
  return ProductOp(
      h, "grid_spmm_15d", rows(), [this](const Tensor& x) { return Forward(x); },
      [this](const Tensor& g) { return Backward(g); }, &status_);
}

ag::Var Spmm15D::ApplyReplicated(const ag::Var& h) {
  return ProductOp(
      h, "grid_spmm_15d", rows(), [this](const Tensor& x) { return Forward(x); },
      [this](const Tensor& g) { return Run(at_, g, TrafficKind::kGradients, /*sum_first=*/true); }, &status_);
}

}  // namespace fg::grid
