#include "runtime/grid/spmm_3d.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/status.h"
#include "flexgraph/ops/ops.h"

namespace fg::grid {
namespace {

using runtime::Communicator;
using runtime::TrafficKind;

// The aware variant's row messages and the fibre's: phase 15 at round 3 (rounds 0-2 are the small
// collectives', the broadcasts' and Split's: collectives.cc, sub_communicator.cc).
constexpr int kPhaseSmall = 15, kRoundRows = 3;

}  // namespace

Spmm3D::Spmm3D(const runtime::ProcessGrid& grid, VertexBlocks blocks, bool aware)
    : grid_(grid), blocks_(std::move(blocks)), aware_(aware), pr_(grid.rows()), pc_(grid.columns()),
      pf_(grid.fibres()), i_(grid.i()), j_(grid.j()), l_(grid.l()) {}

absl::StatusOr<std::unique_ptr<Spmm3D>> Spmm3D::Make(const runtime::ProcessGrid& grid, const Csr& a,
                                                     const VertexBlocks& blocks, bool aware) {
  if (a.num_rows != blocks.n || a.num_cols != blocks.n || blocks.blocks != grid.rows()) {
    return absl::InvalidArgumentError(absl::StrCat("Spmm3D: ", blocks.blocks, " blocks of ", blocks.n,
                                                   " vertices for a grid of ", grid.rows(), " rows and a ",
                                                   a.num_rows, " x ", a.num_cols, " matrix"));
  }
  return Make(grid, BlockRows(a, blocks, grid.i()), BlockRows(a.Transpose(), blocks, grid.i()), blocks, aware);
}

absl::StatusOr<std::unique_ptr<Spmm3D>> Spmm3D::Make(const runtime::ProcessGrid& grid, const Csr& a_rows,
                                                     const Csr& at_rows, const VertexBlocks& blocks, bool aware) {
  if (blocks.blocks != grid.rows() || a_rows.num_rows != blocks.Size(grid.i()) || a_rows.num_cols != blocks.n ||
      at_rows.num_rows != a_rows.num_rows || at_rows.num_cols != blocks.n) {
    return absl::InvalidArgumentError(absl::StrCat("Spmm3D: ", blocks.blocks, " blocks of ", blocks.n,
                                                   " vertices for a grid of ", grid.rows(), " rows; block ",
                                                   grid.i(), "'s rows of A ", a_rows.num_rows, " x ", a_rows.num_cols,
                                                   " and of A^T ", at_rows.num_rows, " x ", at_rows.num_cols));
  }
  std::unique_ptr<Spmm3D> s(new Spmm3D(grid, blocks, aware));
  s->a_ = s->Distribute(a_rows, at_rows);
  s->at_ = s->Distribute(at_rows, a_rows);
  return s;
}

Spmm3D::Operand Spmm3D::Distribute(const Csr& m_rows, const Csr& mt_rows) const {
  Operand op;
  // Block k's slice l, in block-local columns.
  auto slice = [&](const Csr& block, int k) {
    return ColumnRange(block, SliceLo(k, l_) - blocks_.Lo(k), SliceLo(k, l_ + 1) - blocks_.Lo(k));
  };
  std::vector<Csr> row = SplitColumnBlocks(m_rows, blocks_, std::vector<bool>(pr_, true));
  op.cols.resize(pr_);
  for (int k = 0; k < pr_; ++k) {
    const Csr mine = slice(row[k], k);
    Csr compact;
    const bool compacted = aware_ && k != i_;
    const std::vector<int32_t> touched = TouchedColumns(mine, compacted ? &compact : nullptr);
    op.cols[k] = compacted ? static_cast<int64_t>(touched.size()) : mine.num_cols;
    if (k % pc_ == j_) {
      op.own[k] = compacted ? compact : mine;
      op.wire[k] = EncodeBlock(op.own[k]);
    }
  }
  if (aware_) {  // the rows of my H slice each (i', j, l) needs: the columns of A[R_i', R_{i,l}]
    op.send = RowsReaching(mt_rows, blocks_, SliceLo(i_, l_) - blocks_.Lo(i_), SliceLo(i_, l_ + 1) - blocks_.Lo(i_));
    op.send[i_].clear();
  }
  return op;
}

absl::StatusOr<Tensor> Spmm3D::Run(const Operand& op, const Tensor& x, TrafficKind kind) {
  const int64_t w = x.row_width();
  if (x.rows() != rows()) {
    return absl::InvalidArgumentError(absl::StrCat("Spmm3D on grid worker (", i_, ", ", j_, ", ", l_, "): ",
                                                   x.rows(), " rows, expected ", rows()));
  }
  Communicator& row = grid_.row();
  Communicator& column = grid_.column();
  const CallName name = NameCall((*calls_)++, pr_ + 1);
  const int64_t block_rows = blocks_.Size(i_);
  Tensor partial = Tensor::Zeros({block_rows, w});
  for (int k = 0; k < pr_; ++k) {
    const int step = name.first + k;
    const int root = k % pc_;
    std::string a_bytes;
    if (j_ == root) a_bytes = op.wire.at(k);
    FG_RETURN_IF_ERROR(row.Broadcast(&a_bytes, root, name.epoch, step, kind));
    Csr received;
    if (j_ != root) {
      FG_ASSIGN_OR_RETURN(received, DecodeBlock(a_bytes, block_rows, op.cols[k], grid_.RankOf(i_, root, l_)));
    }
    const Csr& block = j_ == root ? op.own.at(k) : received;
    const int64_t slice_rows = SliceLo(k, l_ + 1) - SliceLo(k, l_);
    Tensor h;
    if (!aware_) {
      std::string h_bytes;
      if (i_ == k) h_bytes = runtime::FloatsToBytes(x.f32(), x.numel());
      FG_RETURN_IF_ERROR(column.Broadcast(&h_bytes, k, name.epoch, step, kind));
      if (i_ == k) {
        h = x;
      } else {
        FG_ASSIGN_OR_RETURN(h, BytesToTensor(h_bytes, slice_rows, w, grid_.RankOf(k, j_, l_)));
      }
    } else {
      const uint64_t tag = runtime::MakeTag(name.epoch, 0, kPhaseSmall, kind, step, kRoundRows);
      if (i_ == k) {
        for (int other = 0; other < pr_; ++other) {
          if (other != k && !op.send[other].empty()) column.Send(other, tag, GatherRowBytes(x, op.send[other]));
        }
        h = x;
      } else if (op.cols[k] > 0) {
        FG_ASSIGN_OR_RETURN(std::string bytes, column.Recv(k, tag));
        FG_ASSIGN_OR_RETURN(h, BytesToTensor(bytes, op.cols[k], w, grid_.RankOf(k, j_, l_)));
      }
    }
    if (block.nnz() > 0) ops::AddInPlace(&partial, ops::Spmm(block, h, ops::SpmmReduce::kSum));
  }
  if (pf_ == 1) return partial;  // 2D
  // The fibre's reduce-scatter: slice l' of the partial to (i, j, l'), the others' slice l summed here.
  Communicator& fibre = grid_.fibre();
  const uint64_t tag = runtime::MakeTag(name.epoch, 0, kPhaseSmall, kind, name.first + pr_, kRoundRows);
  const float* p = partial.f32();
  auto slice_at = [&](int l) { return (SliceLo(i_, l) - blocks_.Lo(i_)) * w; };
  for (int other = 0; other < pf_; ++other) {
    if (other != l_) fibre.Send(other, tag, runtime::FloatsToBytes(p + slice_at(other), slice_at(other + 1) - slice_at(other)));
  }
  Tensor z = Tensor::Empty({rows(), w});
  if (z.numel() > 0) std::memcpy(z.f32(), p + slice_at(l_), z.numel() * sizeof(float));
  for (int other = 0; other < pf_; ++other) {
    if (other == l_) continue;
    FG_ASSIGN_OR_RETURN(std::string bytes, fibre.Recv(other, tag));
    FG_ASSIGN_OR_RETURN(Tensor part, BytesToTensor(bytes, rows(), w, grid_.RankOf(i_, j_, other)));
    ops::AddInPlace(&z, part);
  }
  return z;
}

absl::StatusOr<Tensor> Spmm3D::Forward(const Tensor& h) { return Run(a_, h, TrafficKind::kFeatures); }

absl::StatusOr<Tensor> Spmm3D::Backward(const Tensor& g) { return Run(at_, g, TrafficKind::kGradients); }

ag::Var Spmm3D::Apply(const ag::Var& h) {
  return ProductOp(
      h, "grid_spmm_3d", rows(), [this](const Tensor& x) { return Forward(x); },
      [this](const Tensor& g) { return Backward(g); }, &status_);
}

}  // namespace fg::grid
