// The public sparse, segment and row-index ops (ops/ops.h): validation, placement of host index
// arrays on the operand's device, allocation, then the device's kernel.
#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/ops/kernels.h"
#include "flexgraph/ops/ops.h"
#include "flexgraph/ops/placement.h"

namespace fg::ops {

Tensor Spmm(const Csr& a, const Tensor& x, SpmmReduce reduce, const Tensor& edge_w) {
  Tensor out = Tensor::Empty(WithRows(x, a.num_rows), DType::kFloat32, x.device());
  SpmmInto(a, x, reduce, out.f32(), edge_w);
  return out;
}

void SpmmInto(const Csr& a_in, const Tensor& x, SpmmReduce reduce, float* out,
              const Tensor& edge_w) {
  const Csr a = PlacedCsrOperand(a_in, x, "Spmm");
  const float* w = nullptr;
  int64_t heads = 1;
  if (edge_w.defined()) {
    CheckFloat(edge_w, "Spmm", "edge_w");
    FG_CHECK(edge_w.rows() == a.nnz())
        << "Spmm: edge weights " << edge_w.ShapeString() << " for " << a.nnz() << " entries";
    heads = edge_w.row_width();
    FG_CHECK(x.row_width() % heads == 0)
        << "Spmm: width " << x.row_width() << " not divisible by " << heads << " heads";
    CheckSameDevice(edge_w, x, "Spmm", "edge_w");
    w = edge_w.f32();
  } else if (a.values.defined()) {
    w = a.val();
  }
  FG_DISPATCH(x.device(), SpmmCsr, a.row_ptr(), a.col(), w, heads, a.num_rows, x.rows(), a.nnz(),
              x.f32(), x.row_width(), reduce == SpmmReduce::kMean ? 1 : 0, out);
}

Tensor SpmmMax(const Csr& a_in, const Tensor& x, Tensor* argmax) {
  const Csr a = PlacedCsrOperand(a_in, x, "SpmmMax");
  Tensor out = Tensor::Empty(WithRows(x, a.num_rows), DType::kFloat32, x.device());
  *argmax = Tensor::Empty(out.shape(), DType::kInt32, x.device());
  FG_DISPATCH(x.device(), SpmmMax, a.row_ptr(), a.col(), a.num_rows, x.f32(), x.row_width(),
              out.f32(), argmax->i32());
  return out;
}

Tensor SpmmMaxBackward(const Csr& at_in, const Tensor& argmax_in, const Tensor& gy) {
  const Csr at = PlacedCsr(at_in, gy, "SpmmMaxBackward");
  const Tensor argmax = Placed(argmax_in, gy, "SpmmMaxBackward", "argmax");
  CheckSameNumel(argmax, gy, "SpmmMaxBackward");
  Tensor gx = Tensor::Empty(WithRows(gy, at.num_rows), DType::kFloat32, gy.device());
  FG_DISPATCH(gy.device(), SpmmMaxBackward, at.row_ptr(), at.col(), at.num_rows, argmax.i32(),
              gy.f32(), gy.row_width(), gx.f32());
  return gx;
}

Tensor SddmmDot(const Csr& c, const Tensor& a, const Tensor& b, int64_t heads) {
  CheckFloat(a, "SddmmDot", "a");
  CheckFloat(b, "SddmmDot", "b");
  FG_CHECK(a.rows() == c.num_rows && b.rows() == c.num_cols && a.row_width() == b.row_width() &&
           a.row_width() % heads == 0)
      << "SddmmDot: operands " << a.ShapeString() << " and " << b.ShapeString() << " for a "
      << c.num_rows << "x" << c.num_cols << " matrix with " << heads << " heads";
  const Csr placed = PlacedCsr(c, a, "SddmmDot");
  CheckSameDevice(b, a, "SddmmDot", "b");
  Tensor out = Tensor::Empty({c.nnz(), heads}, DType::kFloat32, a.device());
  FG_DISPATCH(a.device(), SddmmDot, placed.row_ptr(), placed.col(), c.num_rows, c.nnz(), a.f32(), b.f32(),
              a.row_width(), heads, out.f32());
  return out;
}

Tensor SddmmAdd(const Csr& c, const Tensor& u, const Tensor& v) {
  CheckFloat(u, "SddmmAdd", "u");
  CheckFloat(v, "SddmmAdd", "v");
  FG_CHECK(u.rows() == c.num_rows && v.rows() == c.num_cols && u.row_width() == v.row_width())
      << "SddmmAdd: operands " << u.ShapeString() << " and " << v.ShapeString() << " for a "
      << c.num_rows << "x" << c.num_cols << " matrix";
  const Csr placed = PlacedCsr(c, u, "SddmmAdd");
  CheckSameDevice(v, u, "SddmmAdd", "v");
  Tensor out = Tensor::Empty({c.nnz(), u.row_width()}, DType::kFloat32, u.device());
  FG_DISPATCH(u.device(), SddmmAdd, placed.row_ptr(), placed.col(), c.num_rows, c.nnz(), u.f32(), v.f32(),
              u.row_width(), out.f32());
  return out;
}

Tensor SegmentSoftmax(const Tensor& offsets_in, const Tensor& scores) {
  CheckFloat(scores, "SegmentSoftmax", "scores");
  const Tensor offsets = Placed(offsets_in, scores, "SegmentSoftmax", "offsets");
  const int64_t segs = offsets.numel() - 1;
  CheckCovers(offsets_in, scores.rows(), "SegmentSoftmax", "scores");
  Tensor y = Tensor::Empty(scores.shape(), DType::kFloat32, scores.device());
  FG_DISPATCH(scores.device(), SegmentSoftmax, offsets.i64(), segs, scores.f32(),
              scores.row_width(), y.f32());
  return y;
}

Tensor SegmentSoftmaxBackward(const Tensor& offsets_in, const Tensor& y, const Tensor& gy) {
  CheckSameNumel(y, gy, "SegmentSoftmaxBackward");
  const Tensor offsets = Placed(offsets_in, y, "SegmentSoftmaxBackward", "offsets");
  Tensor gs = Tensor::Empty(y.shape(), DType::kFloat32, y.device());
  FG_DISPATCH(y.device(), SegmentSoftmaxBackward, offsets.i64(), offsets.numel() - 1, y.f32(),
              gy.f32(), y.row_width(), gs.f32());
  return gs;
}

Tensor SegmentReduce(const Tensor& offsets_in, const Tensor& x, SegmentReduceOp op,
                     Tensor* argmax) {
  CheckFloat(x, "SegmentReduce", "x");
  const Tensor offsets = Placed(offsets_in, x, "SegmentReduce", "offsets");
  const int64_t segs = offsets.numel() - 1;
  CheckCovers(offsets_in, x.rows(), "SegmentReduce", "x");
  Tensor out = Tensor::Empty(WithRows(x, segs), DType::kFloat32, x.device());
  int32_t* am = nullptr;
  if (op == SegmentReduceOp::kMax) {
    FG_CHECK(argmax != nullptr) << "SegmentReduce: max needs an argmax output";
    *argmax = Tensor::Empty(out.shape(), DType::kInt32, x.device());
    am = argmax->i32();
  }
  FG_DISPATCH(x.device(), SegmentReduce, offsets.i64(), segs, x.f32(), x.row_width(),
              static_cast<int>(op), out.f32(), am);
  return out;
}

Tensor SegmentReduceBackward(const Tensor& offsets_in, const Tensor& g, SegmentReduceOp op,
                             const Tensor& argmax_in, int64_t rows) {
  CheckFloat(g, "SegmentReduceBackward", "g");
  const Tensor offsets = Placed(offsets_in, g, "SegmentReduceBackward", "offsets");
  const int64_t segs = offsets.numel() - 1;
  FG_CHECK(g.rows() == segs) << "SegmentReduceBackward: " << segs << " segments, g is " << g.ShapeString();
  Tensor argmax;
  if (op == SegmentReduceOp::kMax) {
    FG_CHECK(argmax_in.defined() && argmax_in.dtype() == DType::kInt32 && argmax_in.numel() == g.numel())
        << "SegmentReduceBackward: max needs the forward's argmax of " << g.ShapeString();
    argmax = Placed(argmax_in, g, "SegmentReduceBackward", "argmax");
  }
  CheckCovers(offsets_in, rows, "SegmentReduceBackward", "the gradient");
  // Zeros: rows before the first segment, if any, get no gradient.
  Tensor gx = Tensor::Zeros(WithRows(g, rows), DType::kFloat32, g.device());
  FG_DISPATCH(g.device(), SegmentReduceBackward, offsets.i64(), segs, g.f32(),
              argmax.defined() ? argmax.i32() : nullptr, g.row_width(), static_cast<int>(op), gx.f32());
  return gx;
}

Tensor GatherRows(const Tensor& x, const Tensor& idx_in) {
  CheckFloat(x, "GatherRows", "x");
  FG_CHECK(idx_in.dtype() == DType::kInt32) << "GatherRows: indices must be int32";
  const Tensor idx = Placed(idx_in, x, "GatherRows", "idx");
  Tensor out = Tensor::Empty(WithRows(x, idx.numel()), DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), GatherRows, x.f32(), x.row_width(), idx.i32(), idx.numel(), out.f32());
  return out;
}

Csr GroupByIndex(const Tensor& idx, int64_t num_rows) {
  FG_CHECK(idx.dtype() == DType::kInt32) << "GroupByIndex: indices must be int32";
  FG_CHECK(num_rows >= 0 && idx.numel() < (int64_t{1} << 31))
      << "GroupByIndex: " << idx.numel() << " indices into " << num_rows << " rows";
  Csr g;
  g.num_rows = num_rows;
  g.num_cols = idx.numel();
  g.offsets = Tensor::Empty({num_rows + 1}, DType::kInt64, idx.device());
  g.indices = Tensor::Empty({idx.numel()}, DType::kInt32, idx.device());
  FG_DISPATCH(idx.device(), GroupByIndex, idx.i32(), idx.numel(), num_rows, g.offsets.i64(),
              g.indices.i32());
  return g;
}

Tensor ScatterAddRows(const Tensor& x, const Tensor& idx, int64_t num_rows) {
  FG_CHECK(idx.numel() == x.rows()) << "ScatterAddRows: " << idx.numel() << " indices for x "
                                    << x.ShapeString();
  return Spmm(GroupByIndex(idx, num_rows), x, SpmmReduce::kSum);
}

Csr DenseToCsr(const Tensor& x) {
  FG_CHECK(x.dtype() == DType::kFloat32 && x.device() == Device::kCpu) << "DenseToCsr: cpu float32";
  const int64_t n = x.rows(), d = x.row_width();
  const float* xs = x.f32();
  // Rows in parallel: counts, their prefix sums, then each row's entries at its offset.
  Tensor offsets = Tensor::Empty({n + 1}, DType::kInt64);
  int64_t* off = offsets.i64();
  off[0] = 0;
  ParallelFor(0, n, [&](int64_t r) {
    const float* row = xs + r * d;
    int64_t k = 0;
    for (int64_t j = 0; j < d; ++j) k += row[j] != 0.0f;
    off[r + 1] = k;
  });
  for (int64_t r = 0; r < n; ++r) off[r + 1] += off[r];
  Csr c;
  c.num_rows = n;
  c.num_cols = d;
  c.offsets = std::move(offsets);
  c.indices = Tensor::Empty({off[n]}, DType::kInt32);
  c.values = Tensor::Empty({off[n]}, DType::kFloat32);
  int32_t* idx = c.indices.i32();
  float* val = c.values.f32();
  ParallelFor(0, n, [&](int64_t r) {
    const float* row = xs + r * d;
    int64_t at = off[r];
    for (int64_t j = 0; j < d; ++j) {
      if (row[j] != 0.0f) {
        idx[at] = static_cast<int32_t>(j);
        val[at++] = row[j];
      }
    }
  });
  return c;
}

}  // namespace fg::ops
