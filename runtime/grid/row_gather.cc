#include "runtime/grid/row_gather.h"

#include <cstring>

#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/status.h"
#include "runtime/grid/blocks.h"

namespace fg::grid {
namespace {

// The gather's messages: phase 15 at round 4 (rounds 0-3 are the small collectives', the
// broadcasts', Split's and the products' rows: collectives.cc, spmm_3d.cc).
constexpr int kPhaseSmall = 15, kRoundGather = 4;

// Columns [lo, lo + w) of the [rows, width] rows in `x`, as bytes.
std::string ColumnBytes(const float* x, int64_t rows, int64_t width, int64_t lo, int64_t w) {
  std::string out(static_cast<size_t>(rows * w) * sizeof(float), '\0');
  for (int64_t r = 0; r < rows; ++r) std::memcpy(out.data() + r * w * sizeof(float), x + r * width + lo, w * sizeof(float));
  return out;
}

}  // namespace

absl::StatusOr<ag::Var> RowGather::operator()(const ag::Var& x, int64_t width) {
  const int pc = row_.size(), j = row_.rank();
  const int64_t lo = ColumnLo(width, pc, j), w = x.row_width(), rows = x.rows();
  const CallName name = NameCall((*calls_)++, 1);
  const uint64_t tag = runtime::MakeTag(name.epoch, 0, kPhaseSmall, runtime::TrafficKind::kFeatures, name.first, kRoundGather);
  for (int k = 0; k < pc; ++k) {
    if (k != j) row_.Send(k, tag, runtime::FloatsToBytes(x.value().f32(), static_cast<size_t>(rows * w)));
  }
  Tensor full = Tensor::Empty({rows, width});
  for (int64_t r = 0; r < rows; ++r) std::memcpy(full.f32() + r * width + lo, x.value().f32() + r * w, w * sizeof(float));
  for (int k = 0; k < pc; ++k) {
    if (k == j) continue;
    const int64_t klo = ColumnLo(width, pc, k), kw = ColumnLo(width, pc, k + 1) - klo;
    FG_ASSIGN_OR_RETURN(std::string bytes, row_.Recv(k, tag));
    Tensor block = Tensor::Empty({rows, kw});
    FG_RETURN_IF_ERROR(runtime::BytesToFloats(bytes, block.f32(), static_cast<size_t>(rows * kw), k));
    for (int64_t r = 0; r < rows; ++r) std::memcpy(full.f32() + r * width + klo, block.f32() + r * kw, kw * sizeof(float));
  }
  return ag::MakeResult(std::move(full), "grid_row_gather", {x},
                        [this, xr = ag::GradRef(x), width, rows](const Tensor& g) {
                          absl::StatusOr<Tensor> mine = ReduceScatter(g, width, rows);
                          if (!mine.ok()) {
                            if (status_.ok()) status_ = mine.status();
                            return;
                          }
                          ag::AccumulateGrad(xr, *mine, "grid_row_gather");
                        });
}

absl::StatusOr<Tensor> RowGather::ReduceScatter(const Tensor& g, int64_t width, int64_t rows) {
  const int pc = row_.size(), j = row_.rank();
  const CallName name = NameCall((*calls_)++, 1);
  const uint64_t tag = runtime::MakeTag(name.epoch, 0, kPhaseSmall, runtime::TrafficKind::kGradients, name.first, kRoundGather);
  for (int k = 0; k < pc; ++k) {
    if (k == j) continue;
    const int64_t klo = ColumnLo(width, pc, k), kw = ColumnLo(width, pc, k + 1) - klo;
    row_.Send(k, tag, ColumnBytes(g.f32(), rows, width, klo, kw));
  }
  const int64_t lo = ColumnLo(width, pc, j), w = ColumnLo(width, pc, j + 1) - lo;
  Tensor sum = Tensor::Empty({rows, w});
  for (int64_t r = 0; r < rows; ++r) std::memcpy(sum.f32() + r * w, g.f32() + r * width + lo, w * sizeof(float));
  Tensor part = Tensor::Empty({rows, w});
  for (int k = 0; k < pc; ++k) {
    if (k == j) continue;
    FG_ASSIGN_OR_RETURN(std::string bytes, row_.Recv(k, tag));
    FG_RETURN_IF_ERROR(runtime::BytesToFloats(bytes, part.f32(), static_cast<size_t>(rows * w), k));
    for (int64_t e = 0; e < rows * w; ++e) sum.f32()[e] += part.f32()[e];
  }
  return sum;
}

}  // namespace fg::grid
