#include "flexgraph/ops/ops.h"

#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/ops/placement.h"
#include "flexgraph/ops/shared/elementwise.h"

namespace fg::ops {
namespace {

void CheckFloat(const Tensor& t, const char* op, const char* arg) {
  FG_CHECK(t.defined()) << op << ": " << arg << " is undefined";
  FG_CHECK(t.dtype() == DType::kFloat32)
      << op << ": " << arg << " must be float32, got " << DTypeName(t.dtype());
}

// Two dense operands of one shape, on one device.
void CheckSameNumel(const Tensor& a, const Tensor& b, const char* op) {
  FG_CHECK(a.numel() == b.numel())
      << op << ": shape mismatch " << a.ShapeString() << " vs " << b.ShapeString();
  FG_CHECK(a.device() == b.device()) << op << ": operands on " << DeviceName(a.device()) << " and "
                                     << DeviceName(b.device());
}

// offsets[segments], read from either device.
int64_t LastOffset(const Tensor& offsets) {
  FG_CHECK(offsets.dtype() == DType::kInt64 && offsets.numel() >= 1)
      << "segment offsets must be int64 [segments + 1], got " << DTypeName(offsets.dtype()) << " "
      << offsets.ShapeString();
  int64_t last = 0;
  CopyBytes(&last, Device::kCpu, offsets.i64() + offsets.numel() - 1, offsets.device(),
            sizeof(int64_t));
  return last;
}

Csr PlacedCsrOperand(const Csr& c, const Tensor& x, const char* op) {
  CheckFloat(x, op, "x");
  FG_CHECK(x.rows() == c.num_cols) << op << ": sparse matrix has " << c.num_cols
                                   << " columns but dense operand has shape " << x.ShapeString();
  return PlacedCsr(c, x, op);
}

Shape WithRows(const Tensor& x, int64_t rows) {
  Shape s = x.shape();
  if (s.empty()) s = {1};
  s[0] = rows;
  return s;
}

}  // namespace

void NoCudaBackend(const char* op) {
  FG_CHECK(false) << op << ": tensor is on cuda but this build has no CUDA backend";
  __builtin_unreachable();
}

Tensor Matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  FG_CHECK(a.rank() == 2 && b.rank() == 2)
      << "Matmul: expects rank-2 operands, got " << a.ShapeString() << " and " << b.ShapeString();
  const int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  Tensor c = Tensor::Empty({m, n}, DType::kFloat32, a.device());
  MatmulInto(a, b, trans_a, trans_b, 1.0f, 0.0f, &c);
  return c;
}

void MatmulInto(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, float alpha,
                float beta, Tensor* c) {
  CheckFloat(a, "Matmul", "a");
  CheckFloat(b, "Matmul", "b");
  const int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const int64_t k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t kb = trans_b ? b.dim(1) : b.dim(0);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  FG_CHECK(k == kb) << "Matmul: inner dimensions differ: " << a.ShapeString()
                    << (trans_a ? "^T" : "") << " x " << b.ShapeString() << (trans_b ? "^T" : "");
  FG_CHECK(c->rank() == 2 && c->dim(0) == m && c->dim(1) == n)
      << "Matmul: output shape " << c->ShapeString() << " != [" << m << ", " << n << "]";
  CheckSameDevice(b, a, "Matmul", "b");
  CheckSameDevice(*c, a, "Matmul", "the output");
  FG_DISPATCH(a.device(), Gemm, trans_a, trans_b, m, n, k, alpha, a.f32(), b.f32(), beta,
              c->f32(), 1);
}

Tensor MatmulBiasRelu(const Tensor& a, const Tensor& w, const Tensor& bias) {
  CheckFloat(a, "MatmulBiasRelu", "a");
  CheckFloat(w, "MatmulBiasRelu", "w");
  CheckFloat(bias, "MatmulBiasRelu", "bias");
  FG_CHECK(a.rank() == 2 && w.rank() == 2 && a.dim(1) == w.dim(0) && bias.numel() == w.dim(1))
      << "MatmulBiasRelu: " << a.ShapeString() << " x " << w.ShapeString() << " + "
      << bias.ShapeString();
  CheckSameDevice(w, a, "MatmulBiasRelu", "w");
  CheckSameDevice(bias, a, "MatmulBiasRelu", "bias");
  Tensor c = Tensor::Empty({a.dim(0), w.dim(1)}, DType::kFloat32, a.device());
  FG_DISPATCH(a.device(), MatmulBiasRelu, a.dim(0), w.dim(1), a.dim(1), a.f32(), w.f32(), bias.f32(),
              c.f32());
  return c;
}

Tensor BatchedMatmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  CheckFloat(a, "BatchedMatmul", "a");
  CheckFloat(b, "BatchedMatmul", "b");
  CheckSameDevice(b, a, "BatchedMatmul", "b");
  FG_CHECK(a.rank() == 3 && b.rank() == 3 && a.dim(0) == b.dim(0))
      << "BatchedMatmul: expects [B, m, k] and [B, k, n], got " << a.ShapeString() << " and "
      << b.ShapeString();
  const int64_t m = trans_a ? a.dim(2) : a.dim(1);
  const int64_t k = trans_a ? a.dim(1) : a.dim(2);
  const int64_t kb = trans_b ? b.dim(2) : b.dim(1);
  const int64_t n = trans_b ? b.dim(1) : b.dim(2);
  FG_CHECK(k == kb) << "BatchedMatmul: inner dimensions differ: " << a.ShapeString() << " x "
                    << b.ShapeString();
  Tensor c = Tensor::Empty({a.dim(0), m, n}, DType::kFloat32, a.device());
  FG_DISPATCH(a.device(), Gemm, trans_a, trans_b, m, n, k, 1.0f, a.f32(), b.f32(), 0.0f, c.f32(),
              a.dim(0));
  return c;
}

Tensor Apply(UnaryOp op, const Tensor& x, float alpha) {
  CheckFloat(x, "Apply", "x");
  Tensor y = Tensor::Empty(x.shape(), DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), Unary, op, alpha, x.f32(), y.f32(), x.numel());
  return y;
}

Tensor ApplyBackward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy, float alpha) {
  CheckSameNumel(x, gy, "ApplyBackward");
  Tensor gx = Tensor::Empty(x.shape(), DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), UnaryBackward, op, alpha, x.f32(), y.f32(), gy.f32(), gx.f32(),
              x.numel());
  return gx;
}

Tensor Add(const Tensor& a, const Tensor& b, float alpha) {
  CheckFloat(a, "Add", "a");
  CheckFloat(b, "Add", "b");
  CheckSameDevice(b, a, "Add", "b");
  int64_t period = 0;
  if (a.numel() != b.numel()) {
    FG_CHECK(a.rank() >= 1 && b.numel() == a.dim(-1))
        << "Add: cannot broadcast " << b.ShapeString() << " onto " << a.ShapeString();
    period = b.numel();
  }
  Tensor y = Tensor::Empty(a.shape(), DType::kFloat32, a.device());
  FG_DISPATCH(a.device(), AddScaled, a.f32(), b.f32(), alpha, y.f32(), a.numel(), period);
  return y;
}

Tensor BiasRelu(const Tensor& x, const Tensor& bias) {
  CheckFloat(x, "BiasRelu", "x");
  CheckFloat(bias, "BiasRelu", "bias");
  FG_CHECK(x.rank() >= 1 && bias.numel() == x.dim(-1))
      << "BiasRelu: bias " << bias.ShapeString() << " for " << x.ShapeString();
  CheckSameDevice(bias, x, "BiasRelu", "bias");
  Tensor y = Tensor::Empty(x.shape(), DType::kFloat32, x.device());
  const int64_t cols = bias.numel();
  FG_DISPATCH(x.device(), BiasRelu, x.f32(), bias.f32(), cols > 0 ? x.numel() / cols : 0, cols, y.f32());
  return y;
}

Tensor BiasReluBackward(const Tensor& y, const Tensor& gy, Tensor* gbias) {
  CheckSameNumel(y, gy, "BiasReluBackward");
  const int64_t cols = y.rank() >= 1 ? y.dim(-1) : 1;
  Tensor gx = Tensor::Empty(y.shape(), DType::kFloat32, y.device());
  *gbias = Tensor::Empty({cols}, DType::kFloat32, y.device());
  FG_DISPATCH(y.device(), BiasReluBackward, y.f32(), gy.f32(), cols > 0 ? y.numel() / cols : 0, cols,
              gx.f32(), gbias->f32());
  return gx;
}

void AddInPlace(Tensor* a, const Tensor& b, float alpha) {
  CheckSameNumel(*a, b, "AddInPlace");
  FG_DISPATCH(a->device(), AddScaled, a->f32(), b.f32(), alpha, a->f32(), a->numel(), 0);
}

Tensor Mul(const Tensor& a, const Tensor& b) {
  CheckSameNumel(a, b, "Mul");
  Tensor y = Tensor::Empty(a.shape(), DType::kFloat32, a.device());
  FG_DISPATCH(a.device(), MulElem, a.f32(), b.f32(), y.f32(), a.numel());
  return y;
}

Tensor Scale(const Tensor& x, float s) {
  Tensor y = Tensor::Empty(x.shape(), DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), Scale, x.f32(), s, y.f32(), x.numel());
  return y;
}

Tensor ScaleRows(const Tensor& x, const Tensor& s) {
  CheckFloat(x, "ScaleRows", "x");
  CheckFloat(s, "ScaleRows", "s");
  CheckSameDevice(s, x, "ScaleRows", "s");
  const int64_t heads = s.row_width();
  FG_CHECK(s.rows() == x.rows() && heads > 0 && x.row_width() % heads == 0)
      << "ScaleRows: scales " << s.ShapeString() << " do not fit " << x.ShapeString();
  Tensor y = Tensor::Empty(x.shape(), DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), ScaleRows, x.f32(), s.f32(), x.rows(), x.row_width(), heads, y.f32());
  return y;
}

Tensor SumRows(const Tensor& x) {
  CheckFloat(x, "SumRows", "x");
  Tensor y = Tensor::Empty({x.row_width()}, DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), SumRows, x.f32(), x.rows(), x.row_width(), y.f32());
  return y;
}

Tensor Concat(const std::vector<Tensor>& parts) {
  FG_CHECK(!parts.empty()) << "Concat: no inputs";
  const int64_t rows = parts[0].rows();
  const Device device = parts[0].device();
  int64_t width = 0;
  for (const Tensor& p : parts) {
    CheckFloat(p, "Concat", "part");
    FG_CHECK(p.rows() == rows) << "Concat: row counts differ: " << parts[0].ShapeString()
                               << " vs " << p.ShapeString();
    FG_CHECK(p.device() == device) << "Concat: parts on " << DeviceName(device) << " and "
                                   << DeviceName(p.device());
    width += p.row_width();
  }
  Tensor y = Tensor::Empty({rows, width}, DType::kFloat32, device);
  int64_t at = 0;
  for (const Tensor& p : parts) {
    const int64_t w = p.row_width();
    FG_DISPATCH(device, CopyColumns, p.f32(), w, 0, rows, w, y.f32(), width, at);
    at += w;
  }
  return y;
}

std::vector<Tensor> Split(const Tensor& x, const std::vector<int64_t>& widths) {
  CheckFloat(x, "Split", "x");
  int64_t total = 0;
  for (int64_t w : widths) total += w;
  FG_CHECK(total == x.row_width()) << "Split: widths sum to " << total << " but input is "
                                   << x.ShapeString();
  std::vector<Tensor> out;
  const int64_t rows = x.rows();
  int64_t at = 0;
  for (int64_t w : widths) {
    Tensor p = Tensor::Empty({rows, w}, DType::kFloat32, x.device());
    FG_DISPATCH(x.device(), CopyColumns, x.f32(), total, at, rows, w, p.f32(), w, 0);
    at += w;
    out.push_back(p);
  }
  return out;
}

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
  const int64_t covered = LastOffset(offsets_in);  // the host copy when there is one: no sync
  FG_CHECK(covered == scores.rows()) << "SegmentSoftmax: segments cover " << covered
                                     << " entries, scores are " << scores.ShapeString();
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
  const int64_t covered = LastOffset(offsets_in);  // the host copy when there is one: no sync
  FG_CHECK(covered == x.rows()) << "SegmentReduce: segments cover " << covered << " rows, x is "
                                << x.ShapeString();
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
  FG_CHECK(LastOffset(offsets_in) == rows) << "SegmentReduceBackward: segments cover " << LastOffset(offsets_in)
                                        << " rows, not " << rows;
  Tensor gx = Tensor::Empty(WithRows(g, rows), DType::kFloat32, g.device());
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

Csr GroupByIndex(const Tensor& idx_any, int64_t num_rows) {
  FG_CHECK(idx_any.dtype() == DType::kInt32) << "GroupByIndex: indices must be int32";
  // The grouping is built on the host (a counting sort) and moved to the indices' device.
  const Tensor idx = idx_any.To(Device::kCpu);
  Csr g;
  g.num_rows = num_rows;
  g.num_cols = idx.numel();
  g.offsets = Tensor::Zeros({num_rows + 1}, DType::kInt64);
  g.indices = Tensor::Empty({idx.numel()}, DType::kInt32);
  int64_t* off = g.offsets.i64();
  const int32_t* id = idx.i32();
  for (int64_t k = 0; k < idx.numel(); ++k) {
    FG_CHECK(id[k] >= 0 && id[k] < num_rows)
        << "GroupByIndex: index " << id[k] << " outside [0, " << num_rows << ")";
    ++off[id[k] + 1];
  }
  for (int64_t r = 0; r < num_rows; ++r) off[r + 1] += off[r];
  std::vector<int64_t> cursor(off, off + num_rows);
  int32_t* pos = g.indices.i32();
  for (int64_t k = 0; k < idx.numel(); ++k) pos[cursor[id[k]]++] = static_cast<int32_t>(k);
  return g.To(idx_any.device());
}

Tensor ScatterAddRows(const Tensor& x, const Tensor& idx, int64_t num_rows) {
  FG_CHECK(idx.numel() == x.rows()) << "ScatterAddRows: " << idx.numel() << " indices for x "
                                    << x.ShapeString();
  return Spmm(GroupByIndex(idx, num_rows), x, SpmmReduce::kSum);
}

Tensor NllLoss(const Tensor& logp, const Tensor& labels_in, const Tensor& rows_in) {
  CheckFloat(logp, "NllLoss", "logp");
  FG_CHECK(logp.rank() == 2) << "NllLoss: log-probabilities must be [n, C], got "
                             << logp.ShapeString();
  FG_CHECK(labels_in.dtype() == DType::kInt64 && labels_in.numel() == logp.dim(0))
      << "NllLoss: labels must be int64 [" << logp.dim(0) << "], got " << labels_in.ShapeString();
  FG_CHECK(rows_in.dtype() == DType::kInt32) << "NllLoss: rows must be int32";
  FG_CHECK(rows_in.numel() > 0) << "NllLoss: no rows";
  const int64_t classes = logp.dim(1);
  if (logp.device() == Device::kCpu) {
    for (int64_t k = 0; k < rows_in.numel(); ++k) {
      const int32_t r = rows_in.i32()[k];
      FG_CHECK(r >= 0 && r < logp.dim(0))
          << "NllLoss: row " << r << " outside [0, " << logp.dim(0) << ")";
      const int64_t y = labels_in.i64()[r];
      FG_CHECK(y >= 0 && y < classes)
          << "NllLoss: label " << y << " of row " << r << " outside [0, " << classes << ")";
    }
  }
  const Tensor labels = Placed(labels_in, logp, "NllLoss", "labels");
  const Tensor rows = Placed(rows_in, logp, "NllLoss", "rows");
  Tensor out = Tensor::Empty({1}, DType::kFloat32, logp.device());
  FG_DISPATCH(logp.device(), NllLoss, logp.f32(), classes, labels.i64(), rows.i32(), rows.numel(),
              out.f32());
  return out;
}

Tensor NllLossBackward(const Tensor& g, const Tensor& logp, const Tensor& labels_in,
                       const Tensor& rows_in) {
  CheckSameDevice(g, logp, "NllLossBackward", "g");
  const Tensor labels = Placed(labels_in, logp, "NllLossBackward", "labels");
  const Tensor rows = Placed(rows_in, logp, "NllLossBackward", "rows");
  Tensor gl = Tensor::Zeros(logp.shape(), DType::kFloat32, logp.device());
  FG_DISPATCH(logp.device(), NllLossBackward, g.f32(), logp.dim(1), labels.i64(), rows.i32(),
              rows.numel(), gl.f32());
  return gl;
}

Tensor BceWithLogits(const Tensor& x, const Tensor& t) {
  CheckFloat(x, "BceWithLogits", "logits");
  CheckFloat(t, "BceWithLogits", "targets");
  CheckSameNumel(x, t, "BceWithLogits");
  FG_CHECK(x.numel() > 0) << "BceWithLogits: empty input";
  Tensor out = Tensor::Empty({1}, DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), BceWithLogits, x.f32(), t.f32(), x.numel(), out.f32());
  return out;
}

Tensor BceWithLogitsBackward(const Tensor& g, const Tensor& x, const Tensor& t) {
  CheckSameNumel(x, t, "BceWithLogitsBackward");
  CheckSameDevice(g, x, "BceWithLogitsBackward", "g");
  Tensor gx = Tensor::Empty(x.shape(), DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), BceWithLogitsBackward, g.f32(), x.f32(), t.f32(), x.numel(), gx.f32());
  return gx;
}

Tensor LogSoftmax(const Tensor& x) {
  CheckFloat(x, "LogSoftmax", "x");
  Tensor y = Tensor::Empty(x.shape(), DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), LogSoftmaxRows, x.f32(), x.rows(), x.row_width(), y.f32());
  return y;
}

Tensor LogSoftmaxBackward(const Tensor& y, const Tensor& gy) {
  CheckSameNumel(y, gy, "LogSoftmaxBackward");
  Tensor gx = Tensor::Empty(y.shape(), DType::kFloat32, y.device());
  FG_DISPATCH(y.device(), LogSoftmaxRowsBackward, y.f32(), gy.f32(), y.rows(), y.row_width(),
              gx.f32());
  return gx;
}

Tensor RowL2Normalize(const Tensor& x, float eps, Tensor* norms) {
  CheckFloat(x, "RowL2Normalize", "x");
  Tensor y = Tensor::Empty(x.shape(), DType::kFloat32, x.device());
  *norms = Tensor::Empty({x.rows()}, DType::kFloat32, x.device());
  FG_DISPATCH(x.device(), RowL2Normalize, x.f32(), x.rows(), x.row_width(), eps, y.f32(),
              norms->f32());
  return y;
}

Tensor RowL2NormalizeBackward(const Tensor& y, const Tensor& norms, const Tensor& gy, float eps) {
  CheckSameNumel(y, gy, "RowL2NormalizeBackward");
  Tensor gx = Tensor::Empty(y.shape(), DType::kFloat32, y.device());
  FG_DISPATCH(y.device(), RowL2NormalizeBackward, y.f32(), norms.f32(), gy.f32(), y.rows(),
              y.row_width(), eps, gx.f32());
  return gx;
}

Csr SparseDropout(const Csr& x, float p, uint64_t seed, const Tensor& row_ids) {
  FG_CHECK(x.values.defined()) << "SparseDropout: the matrix has no values";
  FG_CHECK(p >= 0.0f && p < 1.0f) << "SparseDropout: p must be in [0, 1), got " << p;
  FG_CHECK(!row_ids.defined() || row_ids.numel() == x.num_rows)
      << "SparseDropout: " << row_ids.numel() << " row ids for " << x.num_rows << " rows";
  Csr y = x;
  y.values = Tensor::Empty({x.nnz()});
  const float keep = 1.0f / (1.0f - p);
  const uint32_t threshold = shared::DropoutThreshold(p);
  const int64_t* off = x.row_ptr();
  const int32_t* col = x.col();
  const float* v = x.val();
  float* out = y.values.f32();
  ParallelFor(0, x.num_rows, [&](int64_t r) {
    const uint64_t id = row_ids.defined() ? static_cast<uint64_t>(row_ids.i64()[r]) : r;
    for (int64_t e = off[r]; e < off[r + 1]; ++e) {
      const Philox4 b = PhiloxBlock(seed, static_cast<uint64_t>(col[e] / shared::kDropoutBlockCols), id);
      out[e] = shared::DropoutBits(b, col[e]) >= threshold ? v[e] * keep : 0.0f;
    }
  });
  return y;
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

namespace {
// y = x * mask (x undefined: y = mask) on `device`.
Tensor ApplyDropout(const Tensor* x, int64_t rows, int64_t cols, float p, uint64_t seed,
                    const Tensor& row_ids, Device device, const char* op) {
  FG_CHECK(p >= 0.0f && p < 1.0f) << op << ": p must be in [0, 1), got " << p;
  Tensor y = Tensor::Empty(x != nullptr ? x->shape() : Shape{rows, cols}, DType::kFloat32, device);
  const int64_t* ids = nullptr;
  Tensor placed_ids;
  if (row_ids.defined()) {
    FG_CHECK(row_ids.dtype() == DType::kInt64 && row_ids.numel() == rows)
        << op << ": row ids must be int64 [" << rows << "]";
    placed_ids = Placed(row_ids, y, op, "row_ids");
    ids = placed_ids.i64();
  }
  FG_DISPATCH(device, Dropout, seed, ids, rows, cols, p, x != nullptr ? x->f32() : nullptr,
              y.f32());
  return y;
}
}  // namespace

Tensor DropoutMask(int64_t rows, int64_t cols, float p, uint64_t seed, const Tensor& row_ids,
                   Device device) {
  return ApplyDropout(nullptr, rows, cols, p, seed, row_ids, device, "DropoutMask");
}

Tensor Dropout(const Tensor& x, float p, uint64_t seed, const Tensor& row_ids) {
  CheckFloat(x, "Dropout", "x");
  return ApplyDropout(&x, x.rows(), x.row_width(), p, seed, row_ids, x.device(), "Dropout");
}

}  // namespace fg::ops
