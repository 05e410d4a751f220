#include "flexgraph/ops/ops.h"

#include "flexgraph/base/logging.h"
#include "flexgraph/base/parallel.h"
#include "flexgraph/base/rng.h"
#include "flexgraph/ops/placement.h"
#include "flexgraph/ops/shared/elementwise.h"

namespace fg::ops {

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

namespace {
// *y = ReLU(x + bias); element-wise, so y may be x.
void BiasReluInto(const Tensor& x, const Tensor& bias, Tensor* y) {
  CheckFloat(x, "BiasRelu", "x");
  CheckFloat(bias, "BiasRelu", "bias");
  FG_CHECK(x.rank() >= 1 && bias.numel() == x.dim(-1))
      << "BiasRelu: bias " << bias.ShapeString() << " for " << x.ShapeString();
  CheckSameDevice(bias, x, "BiasRelu", "bias");
  const int64_t cols = bias.numel();
  FG_DISPATCH(x.device(), BiasRelu, x.f32(), bias.f32(), cols > 0 ? x.numel() / cols : 0, cols, y->f32());
}
}  // namespace

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
  Tensor y = Tensor::Empty(x.shape(), DType::kFloat32, x.device());
  BiasReluInto(x, bias, &y);
  return y;
}

void BiasReluInPlace(Tensor* x, const Tensor& bias) { BiasReluInto(*x, bias, x); }

Tensor BiasReluBackward(const Tensor& y, const Tensor& gy, Tensor* gbias) {
  CheckSameNumel(y, gy, "BiasReluBackward");
  const int64_t cols = y.rank() >= 1 ? y.dim(-1) : 1;
  Tensor gx = Tensor::Empty(y.shape(), DType::kFloat32, y.device());
  *gbias = Tensor::Empty({cols}, DType::kFloat32, y.device());
  FG_DISPATCH(y.device(), BiasReluBackward, y.f32(), gy.f32(), cols > 0 ? y.numel() / cols : 0, cols,
              gx.f32(), gbias->f32());
  return gx;
}

void BiasReluBackwardInPlace(const Tensor& y, Tensor* gy, Tensor* gbias) {
  CheckSameNumel(y, *gy, "BiasReluBackward");
  const int64_t cols = y.rank() >= 1 ? y.dim(-1) : 1;
  *gbias = Tensor::Empty({cols}, DType::kFloat32, y.device());
  // Element-wise: each gradient entry is read before its own place is written.
  FG_DISPATCH(y.device(), BiasReluBackward, y.f32(), gy->f32(), cols > 0 ? y.numel() / cols : 0, cols,
              gy->f32(), gbias->f32());
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


namespace {
// *y = x * mask (x undefined: y = mask) on `device`; a new tensor when *y is undefined, else
// written over it (x may be *y: the kernels are element-wise).
void ApplyDropout(const Tensor* x, int64_t rows, int64_t cols, float p, uint64_t seed,
                  const Tensor& row_ids, Device device, const char* op, Tensor* y) {
  FG_CHECK(p >= 0.0f && p < 1.0f) << op << ": p must be in [0, 1), got " << p;
  if (!y->defined()) *y = Tensor::Empty(x != nullptr ? x->shape() : Shape{rows, cols}, DType::kFloat32, device);
  const int64_t* ids = nullptr;
  Tensor placed_ids;
  if (row_ids.defined()) {
    FG_CHECK(row_ids.dtype() == DType::kInt64 && row_ids.numel() == rows)
        << op << ": row ids must be int64 [" << rows << "]";
    placed_ids = Placed(row_ids, *y, op, "row_ids");
    ids = placed_ids.i64();
  }
  FG_DISPATCH(device, Dropout, seed, ids, rows, cols, p, x != nullptr ? x->f32() : nullptr,
              y->f32());
}
}  // namespace

Tensor DropoutMask(int64_t rows, int64_t cols, float p, uint64_t seed, const Tensor& row_ids,
                   Device device) {
  Tensor y;
  ApplyDropout(nullptr, rows, cols, p, seed, row_ids, device, "DropoutMask", &y);
  return y;
}

Tensor Dropout(const Tensor& x, float p, uint64_t seed, const Tensor& row_ids) {
  CheckFloat(x, "Dropout", "x");
  Tensor y;
  ApplyDropout(&x, x.rows(), x.row_width(), p, seed, row_ids, x.device(), "Dropout", &y);
  return y;
}

void DropoutInPlace(Tensor* x, float p, uint64_t seed, const Tensor& row_ids) {
  CheckFloat(*x, "Dropout", "x");
  ApplyDropout(x, x->rows(), x->row_width(), p, seed, row_ids, x->device(), "Dropout", x);
}

}  // namespace fg::ops
