#include "runtime/grid/spmm_2d.h"

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/status.h"
#include "flexgraph/ops/ops.h"

namespace fg::grid {
namespace {

using runtime::Communicator;
using runtime::TrafficKind;

// The aware variant's row messages: phase 15 at round 3 (rounds 0-2 are the small collectives',
// the broadcasts' and Split's: collectives.cc, sub_communicator.cc).
constexpr int kPhaseSmall = 15, kRoundRows = 3;

}  // namespace

Spmm2D::Spmm2D(const runtime::ProcessGrid& grid, VertexBlocks blocks, bool aware)
    : grid_(grid), blocks_(std::move(blocks)), aware_(aware), pr_(grid.rows()), pc_(grid.columns()),
      i_(grid.i()), j_(grid.j()) {}

absl::StatusOr<std::unique_ptr<Spmm2D>> Spmm2D::Make(const runtime::ProcessGrid& grid, const Csr& a,
                                                     const VertexBlocks& blocks, bool aware) {
  if (grid.fibres() != 1) return absl::InvalidArgumentError("Spmm2D needs a 2D grid (it has fibres)");
  if (blocks.blocks != grid.rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Spmm2D: ", blocks.blocks, " vertex blocks for a grid of ", grid.rows(), " rows"));
  }
  if (a.num_rows != blocks.n || a.num_cols != blocks.n) {
    return absl::InvalidArgumentError(
        absl::StrCat("Spmm2D: a ", a.num_rows, " x ", a.num_cols, " matrix over ", blocks.n, " vertices"));
  }
  std::unique_ptr<Spmm2D> s(new Spmm2D(grid, blocks, aware));
  s->a_ = s->Distribute(a);
  s->at_ = s->Distribute(a.Transpose());
  return s;
}

Spmm2D::Operand Spmm2D::Distribute(const Csr& m) const {
  Operand op;
  // Row block i whole: this worker's blocks, and (aware) the columns of the blocks it receives.
  std::vector<Csr> row = RowBlocks(m, blocks_, i_, std::vector<bool>(pr_, true));
  op.cols.resize(pr_);
  for (int k = 0; k < pr_; ++k) {
    Csr compact;
    const bool compacted = aware_ && k != i_;
    const std::vector<int32_t> touched = TouchedColumns(row[k], compacted ? &compact : nullptr);
    op.cols[k] = compacted ? static_cast<int64_t>(touched.size()) : blocks_.Size(k);
    if (k % pc_ == j_) {
      op.own[k] = compacted ? compact : row[k];
      op.wire[k] = EncodeBlock(op.own[k]);
    }
  }
  if (aware_) {  // the rows of my H block each (i', j) needs: the columns of block (i', i)
    op.send.resize(pr_);
    std::vector<bool> mine(pr_, false);
    mine[i_] = true;
    for (int other = 0; other < pr_; ++other) {
      if (other != i_) op.send[other] = TouchedColumns(RowBlocks(m, blocks_, other, mine)[i_], nullptr);
    }
  }
  return op;
}

absl::StatusOr<Tensor> Spmm2D::Run(const Operand& op, const Tensor& x, TrafficKind kind) {
  const int64_t w = x.row_width();
  if (x.rows() != rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Spmm2D on grid worker (", i_, ", ", j_, "): ", x.rows(), " rows, expected ", rows()));
  }
  Communicator& row = grid_.row();
  Communicator& column = grid_.column();
  const CallName name = NameCall(calls_++, pr_);
  const int epoch = name.epoch, first = name.first;
  Tensor z = Tensor::Zeros({rows(), w});
  for (int k = 0; k < pr_; ++k) {
    const int step = first + k;
    const int root = k % pc_;
    std::string a_bytes;
    if (j_ == root) a_bytes = op.wire.at(k);
    FG_RETURN_IF_ERROR(row.Broadcast(&a_bytes, root, epoch, step, kind));
    Csr received;
    if (j_ != root) {
      FG_ASSIGN_OR_RETURN(received, DecodeBlock(a_bytes, rows(), op.cols[k], grid_.RankOf(i_, root)));
    }
    const Csr& block = j_ == root ? op.own.at(k) : received;
    Tensor h;
    if (!aware_) {
      std::string h_bytes;
      if (i_ == k) h_bytes = runtime::FloatsToBytes(x.f32(), x.numel());
      FG_RETURN_IF_ERROR(column.Broadcast(&h_bytes, k, epoch, step, kind));
      if (i_ == k) {
        h = x;
      } else {
        FG_ASSIGN_OR_RETURN(h, BytesToTensor(h_bytes, blocks_.Size(k), w, grid_.RankOf(k, j_)));
      }
    } else {
      const uint64_t tag = runtime::MakeTag(epoch, 0, kPhaseSmall, kind, step, kRoundRows);
      if (i_ == k) {
        for (int other = 0; other < pr_; ++other) {
          if (other != k && !op.send[other].empty()) column.Send(other, tag, GatherRowBytes(x, op.send[other]));
        }
        h = x;
      } else if (op.cols[k] > 0) {
        FG_ASSIGN_OR_RETURN(std::string bytes, column.Recv(k, tag));
        FG_ASSIGN_OR_RETURN(h, BytesToTensor(bytes, op.cols[k], w, grid_.RankOf(k, j_)));
      }
    }
    if (block.nnz() > 0) ops::AddInPlace(&z, ops::Spmm(block, h, ops::SpmmReduce::kSum));
  }
  return z;
}

absl::StatusOr<Tensor> Spmm2D::Forward(const Tensor& h) { return Run(a_, h, TrafficKind::kFeatures); }

absl::StatusOr<Tensor> Spmm2D::Backward(const Tensor& g) { return Run(at_, g, TrafficKind::kGradients); }

ag::Var Spmm2D::Apply(const ag::Var& h) {
  auto z = Forward(h.value());
  if (!z.ok()) {
    if (status_.ok()) status_ = z.status();
    return ag::Var(Tensor::Zeros({rows(), h.value().row_width()}));
  }
  return ag::MakeResult(std::move(*z), "grid_spmm_2d", {h}, [this, hr = ag::GradRef(h)](const Tensor& g) {
    auto gh = Backward(g);
    if (!gh.ok()) {
      if (status_.ok()) status_ = gh.status();
      return;
    }
    ag::AccumulateGrad(hr, *gh, "grid_spmm_2d");
  });
}

}  // namespace fg::grid
