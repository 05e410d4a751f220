// Public entries of the edge ops: validation, allocation, and the CPU kernels (ops/cpu/edge.cc).
#include "flexgraph/ops/edge_ops.h"

#include "flexgraph/base/logging.h"
#include "flexgraph/ops/edge_kernels.h"

namespace fg::ops {
namespace {

void RequireHost(const Tensor& t, const char* op) {
  FG_CHECK(!t.defined() || t.device() == Device::kCpu)
      << op << ": has CPU kernels only; an operand is on " << DeviceName(t.device());
}

void CheckCsr(const Csr& a, const char* op) {
  FG_CHECK(!a.has_int64_indices()) << op << ": needs int32 column ids";
  RequireHost(a.offsets, op);
  RequireHost(a.indices, op);
}

}  // namespace

Tensor EdgeInput(const Csr& a, const Tensor& xs, const Tensor& xd, const Tensor& e) {
  CheckCsr(a, "EdgeInput");
  RequireHost(xs, "EdgeInput");
  RequireHost(xd, "EdgeInput");
  RequireHost(e, "EdgeInput");
  FG_CHECK(xs.rank() == 2 && xs.rows() == a.num_cols)
      << "EdgeInput: sources " << xs.ShapeString() << " for " << a.num_cols << " columns";
  FG_CHECK(xd.rank() == 2 && xd.rows() == a.num_rows)
      << "EdgeInput: destinations " << xd.ShapeString() << " for " << a.num_rows << " rows";
  const int64_t de = e.defined() ? e.row_width() : 0;
  FG_CHECK(!e.defined() || (e.rank() == 2 && e.rows() == a.nnz()))
      << "EdgeInput: edge state " << e.ShapeString() << " for " << a.nnz() << " entries";
  const int64_t ds = xs.row_width(), dd = xd.row_width();
  Tensor out = Tensor::Empty({a.nnz(), ds + dd + de});
  cpu::EdgeInput(a.row_ptr(), a.col(), a.num_rows, xs.f32(), ds, xd.f32(), dd,
                 e.defined() ? e.f32() : nullptr, de, out.f32());
  return out;
}

void EdgeInputBackward(const Csr& a, const Csr& a_t, const Tensor& perm, const Tensor& g, int64_t ds,
                       int64_t dd, Tensor* gxs, Tensor* gxd, Tensor* ge) {
  CheckCsr(a, "EdgeInputBackward");
  CheckCsr(a_t, "EdgeInputBackward");
  RequireHost(g, "EdgeInputBackward");
  RequireHost(perm, "EdgeInputBackward");
  FG_CHECK(g.rank() == 2 && g.rows() == a.nnz() && g.row_width() >= ds + dd)
      << "EdgeInputBackward: gradient " << g.ShapeString() << " for " << a.nnz() << " entries of "
      << ds << " + " << dd << " + de columns";
  FG_CHECK(a_t.num_rows == a.num_cols && a_t.nnz() == a.nnz() && perm.numel() == a.nnz())
      << "EdgeInputBackward: the transpose does not match the structure";
  const int64_t de = g.row_width() - ds - dd;
  if (gxs != nullptr) *gxs = Tensor::Empty({a.num_cols, ds});
  if (gxd != nullptr) *gxd = Tensor::Empty({a.num_rows, dd});
  if (ge != nullptr) *ge = de > 0 ? Tensor::Empty({a.nnz(), de}) : Tensor();
  cpu::EdgeInputBackward(a.row_ptr(), a.num_rows, a_t.row_ptr(), perm.i32(), a.num_cols, g.f32(), ds,
                         dd, de, gxs ? gxs->f32() : nullptr, gxd ? gxd->f32() : nullptr,
                         ge != nullptr && de > 0 ? ge->f32() : nullptr);
}

Tensor SegmentStd(const Tensor& offsets, const Tensor& x, float eps) {
  RequireHost(offsets, "SegmentStd");
  RequireHost(x, "SegmentStd");
  const int64_t segs = offsets.numel() - 1;
  FG_CHECK(segs >= 0 && x.rank() == 2 && offsets.i64()[segs] <= x.rows())
      << "SegmentStd: offsets of " << segs << " segments over " << x.ShapeString();
  Tensor y = Tensor::Empty({segs, x.row_width()});
  cpu::SegmentStd(offsets.i64(), segs, x.f32(), x.row_width(), eps, y.f32());
  return y;
}

Tensor SegmentStdBackward(const Tensor& offsets, const Tensor& x, const Tensor& y, const Tensor& g) {
  RequireHost(g, "SegmentStdBackward");
  FG_CHECK(g.rows() == y.rows() && g.row_width() == y.row_width() && y.row_width() == x.row_width())
      << "SegmentStdBackward: gradient " << g.ShapeString() << " for " << y.ShapeString();
  Tensor gx = Tensor::Zeros(x.shape());
  cpu::SegmentStdBackward(offsets.i64(), offsets.numel() - 1, x.f32(), y.f32(), g.f32(),
                          x.row_width(), gx.f32());
  return gx;
}

}  // namespace fg::ops
