// Public entries of the edge ops: validation, placement, allocation, and the kernels of the
// operands' device (ops/cpu/edge.cc, ops/cuda/edge_kernels.cu).
#include "flexgraph/ops/edge_ops.h"

#include "flexgraph/base/logging.h"
#include "flexgraph/ops/edge_kernels.h"
#include "flexgraph/ops/kernels.h"
#include "flexgraph/ops/placement.h"

namespace fg::ops {

Tensor EdgeInput(const Csr& a_in, const Tensor& xs, const Tensor& xd, const Tensor& e) {
  CheckFloat(xs, "EdgeInput", "sources");
  CheckSameDevice(xd, xs, "EdgeInput", "destinations");
  CheckSameDevice(e, xs, "EdgeInput", "edge state");
  const Csr a = PlacedCsr(a_in, xs, "EdgeInput");
  FG_CHECK(xs.rank() == 2 && xs.rows() == a.num_cols)
      << "EdgeInput: sources " << xs.ShapeString() << " for " << a.num_cols << " columns";
  FG_CHECK(xd.rank() == 2 && xd.rows() == a.num_rows)
      << "EdgeInput: destinations " << xd.ShapeString() << " for " << a.num_rows << " rows";
  const int64_t de = e.defined() ? e.row_width() : 0;
  FG_CHECK(!e.defined() || (e.rank() == 2 && e.rows() == a.nnz()))
      << "EdgeInput: edge state " << e.ShapeString() << " for " << a.nnz() << " entries";
  const int64_t ds = xs.row_width(), dd = xd.row_width();
  Tensor out = Tensor::Empty({a.nnz(), ds + dd + de}, DType::kFloat32, xs.device());
  FG_DISPATCH(xs.device(), EdgeInput, a.row_ptr(), a.col(), a.num_rows, a.nnz(), xs.f32(), ds, xd.f32(),
              dd, e.defined() ? e.f32() : nullptr, de, out.f32());
  return out;
}

void EdgeInputBackward(const Csr& a_in, const Csr& a_t_in, const Tensor& perm_in, const Tensor& g, int64_t ds,
                       int64_t dd, Tensor* gxs, Tensor* gxd, Tensor* ge) {
  CheckFloat(g, "EdgeInputBackward", "gradient");
  const Csr a = PlacedCsr(a_in, g, "EdgeInputBackward");
  const Csr a_t = PlacedCsr(a_t_in, g, "EdgeInputBackward");
  const Tensor perm = Placed(perm_in, g, "EdgeInputBackward", "entry permutation");
  FG_CHECK(g.rank() == 2 && g.rows() == a.nnz() && g.row_width() >= ds + dd)
      << "EdgeInputBackward: gradient " << g.ShapeString() << " for " << a.nnz() << " entries of "
      << ds << " + " << dd << " + de columns";
  FG_CHECK(a_t.num_rows == a.num_cols && a_t.nnz() == a.nnz() && perm.numel() == a.nnz())
      << "EdgeInputBackward: the transpose does not match the structure";
  const int64_t de = g.row_width() - ds - dd;
  const Device dev = g.device();
  if (gxs != nullptr) *gxs = Tensor::Empty({a.num_cols, ds}, DType::kFloat32, dev);
  if (gxd != nullptr) *gxd = Tensor::Empty({a.num_rows, dd}, DType::kFloat32, dev);
  if (ge != nullptr) *ge = de > 0 ? Tensor::Empty({a.nnz(), de}, DType::kFloat32, dev) : Tensor();
  FG_DISPATCH(dev, EdgeInputBackward, a.row_ptr(), a.num_rows, a.nnz(), a_t.row_ptr(), perm.i32(),
              a.num_cols, g.f32(), ds, dd, de, gxs ? gxs->f32() : nullptr, gxd ? gxd->f32() : nullptr,
              ge != nullptr && de > 0 ? ge->f32() : nullptr);
}

Tensor SegmentStd(const Tensor& offsets_in, const Tensor& x, float eps) {
  CheckFloat(x, "SegmentStd", "x");
  FG_CHECK(x.rank() == 2) << "SegmentStd: x must be [rows, d], got " << x.ShapeString();
  const int64_t segs = offsets_in.numel() - 1;
  FG_CHECK(segs >= 0 && offsets_in.dtype() == DType::kInt64)
      << "SegmentStd: segment offsets must be int64 [segments + 1]";
  // Host offsets are checked; device offsets were placed from checked host ones (placement.h).
  FG_CHECK(offsets_in.device() != Device::kCpu || offsets_in.i64()[segs] <= x.rows())
      << "SegmentStd: offsets of " << segs << " segments over " << x.ShapeString();
  const Tensor offsets = Placed(offsets_in, x, "SegmentStd", "offsets");
  Tensor y = Tensor::Empty({segs, x.row_width()}, DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), SegmentStd, offsets.i64(), segs, x.f32(), x.row_width(), eps, y.f32());
  return y;
}

Tensor SegmentStdBackward(const Tensor& offsets_in, const Tensor& x, const Tensor& y, const Tensor& g) {
  CheckFloat(g, "SegmentStdBackward", "gradient");
  CheckSameDevice(x, g, "SegmentStdBackward", "x");
  CheckSameDevice(y, g, "SegmentStdBackward", "y");
  FG_CHECK(g.rows() == y.rows() && g.row_width() == y.row_width() && y.row_width() == x.row_width() &&
           offsets_in.numel() == y.rows() + 1)
      << "SegmentStdBackward: gradient " << g.ShapeString() << " for " << y.ShapeString();
  const Tensor offsets = Placed(offsets_in, x, "SegmentStdBackward", "offsets");
  Tensor gx = Tensor::Zeros(x.shape(), DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), SegmentStdBackward, offsets.i64(), offsets.numel() - 1, x.f32(), y.f32(), g.f32(),
              x.row_width(), gx.f32());
  return gx;
}

}  // namespace fg::ops
