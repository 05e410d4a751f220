#include "flexgraph/autograd/functions.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "flexgraph/base/logging.h"

namespace fg::ag {
namespace {

using ops::SpmmReduce;

void CheckSameShape(const Var& a, const Var& b, const char* op) {
  FG_CHECK(a.value().numel() == b.value().numel())
      << op << ": shape mismatch " << a.value().ShapeString() << " vs " << b.value().ShapeString();
}

Var Unary(const Var& x, ops::UnaryOp op, float alpha, const char* name) {
  Tensor y = ops::Apply(op, x.value(), alpha);
  // ReLU's backward reads the sign of its input, which its output has too: x is not kept.
  Tensor xv = op == ops::UnaryOp::kRelu ? y : x.value();
  return MakeResult(y, name, {x}, [x = GradRef(x), xv, y, op, alpha, name](const Tensor& g) {
    AccumulateGrad(x, ops::ApplyBackward(op, xv, y, g, alpha), name);
  });
}

}  // namespace

Var MatMul(const Var& a, const Var& b, bool ta, bool tb) {
  Tensor y = ops::Matmul(a.value(), b.value(), ta, tb);
  // Each input's gradient needs the other input's value only.
  Tensor av = b.requires_grad() ? a.value() : Tensor(), bv = a.requires_grad() ? b.value() : Tensor();
  return MakeResult(y, "MatMul", {a, b},
                    [a = GradRef(a), b = GradRef(b), av, bv, ta, tb](const Tensor& g) {
    // y = op(a) op(b): d op(a) = g op(b)^T, d op(b) = op(a)^T g.
    if (a.requires_grad()) {
      Tensor ga = ta ? ops::Matmul(bv, g, tb, true) : ops::Matmul(g, bv, false, !tb);
      AccumulateGrad(a, ga, "MatMul");
    }
    if (b.requires_grad()) {
      Tensor gb = tb ? ops::Matmul(g, av, true, ta) : ops::Matmul(av, g, !ta, false);
      AccumulateGrad(b, gb, "MatMul");
    }
  });
}

Var MatMulSum(const Var& a1, const Var& b1, const Var& a2, const Var& b2) {
  FG_CHECK(a1.rows() == a2.rows() && b1.value().rank() == 2 && b2.value().rank() == 2 &&
           b1.value().dim(1) == b2.value().dim(1))
      << "MatMulSum: " << a1.value().ShapeString() << " x " << b1.value().ShapeString() << " + "
      << a2.value().ShapeString() << " x " << b2.value().ShapeString();
  Tensor y = ops::Matmul(a1.value(), b1.value());
  ops::MatmulInto(a2.value(), b2.value(), false, false, 1.0f, 1.0f, &y);
  auto keep = [](const Var& x, const Var& other) { return other.requires_grad() ? x.value() : Tensor(); };
  Tensor a1v = keep(a1, b1), b1v = keep(b1, a1), a2v = keep(a2, b2), b2v = keep(b2, a2);
  return MakeResult(y, "MatMulSum", {a1, b1, a2, b2},
                    [a1 = GradRef(a1), b1 = GradRef(b1), a2 = GradRef(a2), b2 = GradRef(b2), a1v, b1v,
                     a2v, b2v](const Tensor& g) {
    if (a1.requires_grad()) AccumulateGrad(a1, ops::Matmul(g, b1v, false, true), "MatMulSum");
    if (b1.requires_grad()) AccumulateGrad(b1, ops::Matmul(a1v, g, true, false), "MatMulSum");
    if (a2.requires_grad()) AccumulateGrad(a2, ops::Matmul(g, b2v, false, true), "MatMulSum");
    if (b2.requires_grad()) AccumulateGrad(b2, ops::Matmul(a2v, g, true, false), "MatMulSum");
  });
}

namespace {
// The backward of Dropout(x) w for a large x, in blocks of rows (16 MB, or an eighth of x): each block's dropped rows are
// drawn for dw, and where x has a gradient already (another op's), the block's input gradient is
// added into it; so a pass holds a block more than x's gradient, never a dropped copy of x or a
// second gradient of its size.
constexpr size_t kDropoutBlockBytes = size_t{16} << 20;

void DropoutMatMulBackwardInBlocks(const GradRef& x, const GradRef& w, const Tensor& xv, const Tensor& wv,
                                   const Tensor& g, float p, uint64_t seed, const Tensor& row_ids) {
  const int64_t n = g.rows(), k = wv.dim(0);
  // At most 8 blocks: fewer, larger products where x is very large (a GPU runs small ones slowly).
  const int64_t block = std::max<int64_t>({1024, (n + 7) / 8, static_cast<int64_t>(kDropoutBlockBytes / (k * sizeof(float)))});
  Tensor gw = w.requires_grad() ? Tensor::Empty({k, g.row_width()}, DType::kFloat32, g.device()) : Tensor();
  const bool first = x.requires_grad() && !x.node()->grad.defined();  // x's gradient is this one alone
  for (int64_t lo = 0; lo < n; lo += block) {
    const int64_t rows = std::min(block, n - lo);
    Tensor ids;  // the block's dropout keys: its rows' ids, or their positions in x
    if (row_ids.defined()) {
      ids = row_ids.RowsCopy(lo, rows);
    } else {
      std::vector<int64_t> keys(rows);
      std::iota(keys.begin(), keys.end(), lo);
      ids = Tensor::FromVector(keys).To(g.device());
    }
    const Tensor gb = g.RowsCopy(lo, rows);
    if (w.requires_grad()) {
      ops::MatmulInto(ops::Dropout(xv.RowsCopy(lo, rows), p, seed, ids), gb, true, false, 1.0f, lo == 0 ? 0.0f : 1.0f,
                      &gw);
    }
    if (x.requires_grad() && !first) {
      Tensor gx = ops::Matmul(gb, wv, false, true);
      ops::DropoutInPlace(&gx, p, seed, ids);
      AccumulateGradRowRange(x, lo, gx, "DropoutMatMul");
    }
  }
  if (w.requires_grad()) AccumulateGrad(w, gw, "DropoutMatMul");
  if (first) {  // after the blocks, which then ran beside less
    Tensor gx = ops::Matmul(g, wv, false, true);
    ops::DropoutInPlace(&gx, p, seed, row_ids);
    AccumulateGrad(x, gx, "DropoutMatMul");
  }
}
}  // namespace

Var DropoutMatMul(const Var& x, const Var& w, float p, uint64_t seed, const Tensor& row_ids,
                  const Var& x2, const Var& w2) {
  const bool plus = x2.defined() && w2.defined();
  Tensor y;
  {
    const Tensor d = ops::Dropout(x.value(), p, seed, row_ids);  // released here: backward redraws it
    y = ops::Matmul(d, w.value());
  }
  if (plus) ops::MatmulInto(x2.value(), w2.value(), false, false, 1.0f, 1.0f, &y);
  auto keep = [](const Var& v, const Var& other) { return other.requires_grad() ? v.value() : Tensor(); };
  Tensor xv = keep(x, w), wv = keep(w, x), x2v = plus ? keep(x2, w2) : Tensor(), w2v = plus ? keep(w2, x2) : Tensor();
  std::vector<Var> inputs = {x, w};
  if (plus) inputs.insert(inputs.end(), {x2, w2});
  return MakeResult(y, "DropoutMatMul", inputs,
                    [x = GradRef(x), w = GradRef(w), x2 = GradRef(x2), w2 = GradRef(w2), xv, wv, x2v, w2v, p,
                     seed, row_ids, plus](const Tensor& g) {
    const int64_t k = w.shape()[0];
    if (static_cast<size_t>(g.rows() * k) * sizeof(float) > 4 * kDropoutBlockBytes) {
      DropoutMatMulBackwardInBlocks(x, w, xv, wv, g, p, seed, row_ids);
    } else {
      if (w.requires_grad()) {
        AccumulateGrad(w, ops::Matmul(ops::Dropout(xv, p, seed, row_ids), g, true, false), "DropoutMatMul");
      }
      if (x.requires_grad()) {
        Tensor gx = ops::Matmul(g, wv, false, true);
        ops::DropoutInPlace(&gx, p, seed, row_ids);
        AccumulateGrad(x, gx, "DropoutMatMul");
      }
    }
    if (plus && x2.requires_grad()) AccumulateGrad(x2, ops::Matmul(g, w2v, false, true), "DropoutMatMul");
    if (plus && w2.requires_grad()) AccumulateGrad(w2, ops::Matmul(x2v, g, true, false), "DropoutMatMul");
  });
}

Var BatchedMatMul(const Var& a, const Var& b, bool ta, bool tb) {
  Tensor y = ops::BatchedMatmul(a.value(), b.value(), ta, tb);
  Tensor av = b.requires_grad() ? a.value() : Tensor(), bv = a.requires_grad() ? b.value() : Tensor();
  return MakeResult(y, "BatchedMatMul", {a, b},
                    [a = GradRef(a), b = GradRef(b), av, bv, ta, tb](const Tensor& g) {
    if (a.requires_grad()) {
      Tensor ga = ta ? ops::BatchedMatmul(bv, g, tb, true) : ops::BatchedMatmul(g, bv, false, !tb);
      AccumulateGrad(a, ga, "BatchedMatMul");
    }
    if (b.requires_grad()) {
      Tensor gb = tb ? ops::BatchedMatmul(g, av, true, ta) : ops::BatchedMatmul(av, g, !ta, false);
      AccumulateGrad(b, gb, "BatchedMatMul");
    }
  });
}

Var Add(const Var& a, const Var& b) {
  CheckSameShape(a, b, "Add");
  Tensor y = ops::Add(a.value(), b.value());
  return MakeResult(y, "Add", {a, b}, [a = GradRef(a), b = GradRef(b)](const Tensor& g) {
    AccumulateGrad(a, g, "Add");
    AccumulateGrad(b, g, "Add");
  });
}

Var Sub(const Var& a, const Var& b) {
  CheckSameShape(a, b, "Sub");
  Tensor y = ops::Add(a.value(), b.value(), -1.0f);
  return MakeResult(y, "Sub", {a, b}, [a = GradRef(a), b = GradRef(b)](const Tensor& g) {
    AccumulateGrad(a, g, "Sub");
    if (b.requires_grad()) AccumulateGrad(b, ops::Scale(g, -1.0f), "Sub");
  });
}

Var AddBias(const Var& x, const Var& bias) {
  FG_CHECK(bias.value().numel() == x.value().dim(-1))
      << "AddBias: bias " << bias.value().ShapeString() << " for input " << x.value().ShapeString();
  Tensor y = ops::Add(x.value(), bias.value());
  const int64_t width = bias.value().numel();
  return MakeResult(y, "AddBias", {x, bias},
                    [x = GradRef(x), bias = GradRef(bias), width](const Tensor& g) {
    AccumulateGrad(x, g, "AddBias");
    if (bias.requires_grad()) {
      AccumulateGrad(bias, ops::SumRows(g.Reshape({g.numel() / width, width})), "AddBias");
    }
  });
}

namespace {
// Backward helpers that write over the incoming gradient when nothing else holds it (the node's
// gradient, released once its closure returns): a pass then holds one such buffer, not two.
Tensor ReluGradient(const Tensor& y, const Tensor& g, Tensor* gb) {
  if (!g.sole_owner()) return ops::BiasReluBackward(y, g, gb);
  Tensor gx = g;
  ops::BiasReluBackwardInPlace(y, &gx, gb);
  return gx;
}
Tensor Dropped(const Tensor& g, float p, uint64_t seed, const Tensor& row_ids) {
  if (!g.sole_owner()) return ops::Dropout(g, p, seed, row_ids);
  Tensor gx = g;
  ops::DropoutInPlace(&gx, p, seed, row_ids);
  return gx;
}
}  // namespace

Var BiasRelu(const Var& x, const Var& bias) {
  Tensor y = ops::BiasRelu(x.value(), bias.value());
  return MakeResult(y, "BiasRelu", {x, bias}, [x = GradRef(x), bias = GradRef(bias), y](const Tensor& g) {
    Tensor gb;
    AccumulateGrad(x, ReluGradient(y, g, &gb), "BiasRelu");
    AccumulateGrad(bias, gb, "BiasRelu");
  });
}

Var LinearBiasRelu(const Var& x, const Var& weight, const Var& bias, const Var& x2, const Var& w2) {
  const bool plus = x2.defined() && w2.defined();
  Tensor y;
  if (plus) {  // the sum of the products is the only pre-activation, and it lives for this call only
    y = ops::Matmul(x.value(), weight.value());
    ops::MatmulInto(x2.value(), w2.value(), false, false, 1.0f, 1.0f, &y);
    ops::BiasReluInPlace(&y, bias.value());
  } else {
    y = ops::MatmulBiasRelu(x.value(), weight.value(), bias.value());
  }
  // As MatMul: each input's gradient needs the other's value only.
  auto keep = [](const Var& v, const Var& other) { return other.requires_grad() ? v.value() : Tensor(); };
  Tensor xv = keep(x, weight), wv = keep(weight, x), x2v = plus ? keep(x2, w2) : Tensor(),
         w2v = plus ? keep(w2, x2) : Tensor();
  std::vector<Var> inputs = {x, weight, bias};
  if (plus) inputs.insert(inputs.end(), {x2, w2});
  return MakeResult(y, "LinearBiasRelu", inputs,
                    [x = GradRef(x), weight = GradRef(weight), bias = GradRef(bias), x2 = GradRef(x2),
                     w2 = GradRef(w2), xv, wv, x2v, w2v, y, plus](const Tensor& g) {
    Tensor gb;
    const Tensor gz = ReluGradient(y, g, &gb);
    AccumulateGrad(bias, gb, "LinearBiasRelu");
    if (x.requires_grad()) AccumulateGrad(x, ops::Matmul(gz, wv, false, true), "LinearBiasRelu");
    if (weight.requires_grad()) AccumulateGrad(weight, ops::Matmul(xv, gz, true, false), "LinearBiasRelu");
    if (plus && x2.requires_grad()) AccumulateGrad(x2, ops::Matmul(gz, w2v, false, true), "LinearBiasRelu");
    if (plus && w2.requires_grad()) AccumulateGrad(w2, ops::Matmul(x2v, gz, true, false), "LinearBiasRelu");
  });
}

Var Mul(const Var& a, const Var& b) {
  CheckSameShape(a, b, "Mul");
  Tensor y = ops::Mul(a.value(), b.value());
  Tensor av = b.requires_grad() ? a.value() : Tensor(), bv = a.requires_grad() ? b.value() : Tensor();
  return MakeResult(y, "Mul", {a, b}, [a = GradRef(a), b = GradRef(b), av, bv](const Tensor& g) {
    if (a.requires_grad()) AccumulateGrad(a, ops::Mul(g, bv), "Mul");
    if (b.requires_grad()) AccumulateGrad(b, ops::Mul(g, av), "Mul");
  });
}

Var Scale(const Var& x, float s) {
  Tensor y = ops::Scale(x.value(), s);
  return MakeResult(y, "Scale", {x}, [x = GradRef(x), s](const Tensor& g) {
    AccumulateGrad(x, ops::Scale(g, s), "Scale");
  });
}

Var ScaleRows(const Var& x, const Var& s) {
  Tensor y = ops::ScaleRows(x.value(), s.value());
  Tensor xv = s.requires_grad() ? x.value() : Tensor(), sv = s.value();
  return MakeResult(y, "ScaleRows", {x, s},
                    [x = GradRef(x), s = GradRef(s), xv, sv](const Tensor& g) {
    if (x.requires_grad()) AccumulateGrad(x, ops::ScaleRows(g, sv), "ScaleRows");
    if (s.requires_grad()) {
      // ds[r, h] = <g[r, slice h], x[r, slice h]>: an SDDMM over the identity pattern.
      const int64_t n = xv.rows();
      const int64_t heads = sv.row_width();
      std::vector<int64_t> off(n + 1);
      std::vector<int32_t> col(n);
      for (int64_t i = 0; i < n; ++i) {
        off[i + 1] = i + 1;
        col[i] = static_cast<int32_t>(i);
      }
      Csr eye = Csr::FromVectors(n, n, off, col).To(g.device());
      Tensor gs = ops::SddmmDot(eye, g.Reshape({n, g.row_width()}),
                                xv.Reshape({n, xv.row_width()}), heads);
      AccumulateGrad(s, gs, "ScaleRows");
    }
  });
}

Var Relu(const Var& x) { return Unary(x, ops::UnaryOp::kRelu, 0.0f, "Relu"); }
Var LeakyRelu(const Var& x, float slope) {
  return Unary(x, ops::UnaryOp::kLeakyRelu, slope, "LeakyRelu");
}
Var Elu(const Var& x, float alpha) { return Unary(x, ops::UnaryOp::kElu, alpha, "Elu"); }
Var Tanh(const Var& x) { return Unary(x, ops::UnaryOp::kTanh, 0.0f, "Tanh"); }
Var Sigmoid(const Var& x) { return Unary(x, ops::UnaryOp::kSigmoid, 0.0f, "Sigmoid"); }
Var Exp(const Var& x) { return Unary(x, ops::UnaryOp::kExp, 0.0f, "Exp"); }

namespace {
// The last dropout on this thread. A layer often drops the same rows twice with the same mask
// (Message on the table, Update on the roots, which are the table in one process); the second
// call then returns the first result instead of computing and storing it again.
struct DropoutMemo {
  std::weak_ptr<Node> x, y;
  float p = 0.0f;
  uint64_t seed = 0;
  Tensor row_ids;
};
thread_local DropoutMemo t_dropout_memo;

bool SameRowIds(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined() || a.raw() == b.raw()) return true;
  if (a.numel() != b.numel() || a.dtype() != b.dtype() || a.device() != Device::kCpu ||
      b.device() != Device::kCpu) {
    return false;
  }
  return std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}
}  // namespace

Var Dropout(const Var& x, float p, uint64_t seed, bool training, const Tensor& row_ids) {
  if (!training || p == 0.0f) return x;
  DropoutMemo& memo = t_dropout_memo;
  if (memo.x.lock() == x.node() && memo.p == p && memo.seed == seed &&
      SameRowIds(memo.row_ids, row_ids)) {
    std::shared_ptr<Node> y = memo.y.lock();
    if (y != nullptr && y->value.defined()) return Var::FromNode(std::move(y));
  }
  // The mask is a function of (seed, row id, column): backward regenerates it instead of storing it.
  Tensor y = ops::Dropout(x.value(), p, seed, row_ids);
  Var out = MakeResult(y, "Dropout", {x}, [x = GradRef(x), p, seed, row_ids](const Tensor& g) {
    AccumulateGrad(x, Dropped(g, p, seed, row_ids), "Dropout");
  });
  memo.x = x.node();
  memo.y = out.node();
  memo.p = p;
  memo.seed = seed;
  memo.row_ids = row_ids;
  return out;
}

Var Concat(const std::vector<Var>& parts) {
  std::vector<Tensor> values;
  std::vector<int64_t> widths;
  for (const Var& p : parts) {
    values.push_back(p.value().Reshape({p.value().rows(), p.value().row_width()}));
    widths.push_back(p.value().row_width());
  }
  Tensor y = ops::Concat(values);
  values.clear();
  std::vector<GradRef> refs;
  for (const Var& p : parts) refs.emplace_back(p);
  return MakeResult(y, "Concat", parts, [refs, widths](const Tensor& g) {
    std::vector<Tensor> gs = ops::Split(g, widths);
    for (size_t i = 0; i < refs.size(); ++i) AccumulateGrad(refs[i], gs[i], "Concat");
  });
}

Var ConcatRows(const std::vector<Var>& parts) {
  FG_CHECK(!parts.empty()) << "ConcatRows: no parts";
  const Tensor& first = parts[0].value();
  Shape shape = first.shape();
  FG_CHECK(!shape.empty()) << "ConcatRows: a scalar part";
  int64_t rows = 0;
  for (const Var& p : parts) {
    const Tensor& v = p.value();
    FG_CHECK(v.rank() == first.rank() && v.row_width() == first.row_width() &&
             v.device() == first.device() && v.dtype() == first.dtype())
        << "ConcatRows: part " << v.ShapeString() << " beside " << first.ShapeString();
    rows += v.rows();
  }
  shape[0] = rows;
  Tensor y = Tensor::Empty(shape, first.dtype(), first.device());
  std::vector<int64_t> begin;
  std::vector<GradRef> refs;
  int64_t at = 0;
  const size_t row_bytes = first.row_width() * DTypeSize(first.dtype());
  for (const Var& p : parts) {
    const Tensor& v = p.value();
    if (v.rows() > 0) {
      CopyBytes(static_cast<char*>(y.raw()) + at * row_bytes, y.device(), v.raw(), v.device(),
                v.rows() * row_bytes);
    }
    begin.push_back(at);
    refs.emplace_back(p);
    at += v.rows();
  }
  return MakeResult(y, "ConcatRows", parts, [refs, begin](const Tensor& g) {
    for (size_t i = 0; i < refs.size(); ++i) {
      if (refs[i].requires_grad()) {
        AccumulateGrad(refs[i], g.RowsCopy(begin[i], refs[i].rows()).Reshape(refs[i].shape()), "ConcatRows");
      }
    }
  });
}

std::vector<Var> Split(const Var& x, const std::vector<int64_t>& widths) {
  // Each piece is a gather of columns; backward scatters into a zero gradient of x's shape.
  std::vector<Tensor> pieces = ops::Split(x.value().Reshape({x.rows(), x.row_width()}), widths);
  std::vector<Var> out;
  int64_t at = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const int64_t offset = at, width = widths[i], total = x.row_width();
    out.push_back(MakeResult(pieces[i], "Split", {x},
                             [x = GradRef(x), offset, width, total](const Tensor& g) {
        // The gradient of x is g in its column block and zero elsewhere.
      const Device device = g.device();
      std::vector<Tensor> blocks;
      if (offset > 0) blocks.push_back(Tensor::Zeros({x.rows(), offset}, DType::kFloat32, device));
      blocks.push_back(g.Reshape({x.rows(), width}));
      if (offset + width < total) {
        blocks.push_back(
            Tensor::Zeros({x.rows(), total - offset - width}, DType::kFloat32, device));
      }
      AccumulateGrad(x, ops::Concat(blocks), "Split");
    }));
    at += widths[i];
  }
  return out;
}

Var Reshape(const Var& x, const Shape& shape) {
  Tensor y = x.value().Reshape(shape);
  return MakeResult(y, "Reshape", {x}, [x = GradRef(x)](const Tensor& g) {
    AccumulateGrad(x, g.Reshape(x.shape()), "Reshape");
  });
}

Var RowL2Normalize(const Var& x, float eps) {
  Tensor norms;
  Tensor y = ops::RowL2Normalize(x.value(), eps, &norms);
  return MakeResult(y, "RowL2Normalize", {x}, [x = GradRef(x), y, norms, eps](const Tensor& g) {
    AccumulateGrad(x, ops::RowL2NormalizeBackward(y, norms, g, eps), "RowL2Normalize");
  });
}

Var Sum(const Var& x) {
  const Tensor v = x.value().To(Device::kCpu);
  double s = 0.0;
  const float* p = v.f32();
  for (int64_t i = 0; i < v.numel(); ++i) s += p[i];
  Tensor y = Tensor::Full({1}, static_cast<float>(s)).To(x.value().device());
  return MakeResult(y, "Sum", {x}, [x = GradRef(x)](const Tensor& g) {
    AccumulateGrad(x, Tensor::Full(x.shape(), g.Item()).To(g.device()), "Sum");
  });
}

Var Mean(const Var& x) {
  const int64_t n = x.value().numel();
  FG_CHECK(n > 0) << "Mean: empty input";
  return Scale(Sum(x), 1.0f / static_cast<float>(n));
}

Var SumRows(const Var& x) {
  Tensor y = ops::SumRows(x.value());
  return MakeResult(y, "SumRows", {x}, [x = GradRef(x)](const Tensor& g) {
    Tensor full = Tensor::Zeros({x.rows(), x.row_width()}, DType::kFloat32, g.device());
    full = ops::Add(full, g);
    AccumulateGrad(x, full, "SumRows");
  });
}

Var MeanMiddle(const Var& x) {
  FG_CHECK(x.value().rank() == 3) << "MeanMiddle: expects [n, k, d], got "
                                  << x.value().ShapeString();
  const int64_t n = x.dim(0), k = x.dim(1), d = x.dim(2);
  std::vector<int64_t> off(n + 1);
  for (int64_t i = 0; i <= n; ++i) off[i] = i * k;
  Tensor offsets = Tensor::FromVector(off).To(x.value().device());
  return SegmentReduce(offsets, Reshape(x, {n * k, d}), ops::SegmentReduceOp::kMean);
}

Var GatherRows(const Var& x, const Tensor& idx) {
  Tensor y = ops::GatherRows(x.value(), idx);
  return MakeResult(y, "GatherRows", {x}, [x = GradRef(x), idx](const Tensor& g) {
    AccumulateGrad(x, ops::ScatterAddRows(g, idx, x.rows()), "GatherRows");
  });
}

Var FirstRows(const Var& x, int64_t n) {
  return MakeResult(x.value().FirstRows(n), "FirstRows", {x}, [x = GradRef(x)](const Tensor& g) {
    AccumulateGradRowRange(x, 0, g, "FirstRows");
  });
}

Var ScatterAddRows(const Var& x, const Tensor& idx, int64_t num_rows) {
  Tensor y = ops::ScatterAddRows(x.value(), idx, num_rows);
  return MakeResult(y, "ScatterAddRows", {x}, [x = GradRef(x), idx](const Tensor& g) {
    AccumulateGrad(x, ops::GatherRows(g, idx), "ScatterAddRows");
  });
}

Var LogSoftmax(const Var& x) {
  Tensor y = ops::LogSoftmax(x.value());
  return MakeResult(y, "LogSoftmax", {x}, [x = GradRef(x), y](const Tensor& g) {
    AccumulateGrad(x, ops::LogSoftmaxBackward(y, g), "LogSoftmax");
  });
}

Var NllLoss(const Var& logp, const Tensor& labels, const Tensor& rows) {
  Tensor out = ops::NllLoss(logp.value(), labels, rows);
  return MakeResult(out, "NllLoss", {logp},
                    [logp = GradRef(logp), lp = logp.value(), labels, rows](const Tensor& g) {
    AccumulateGrad(logp, ops::NllLossBackward(g, lp, labels, rows), "NllLoss");
  });
}

Var BceWithLogits(const Var& logits, const Tensor& targets) {
  Tensor out = ops::BceWithLogits(logits.value(), targets);
  return MakeResult(out, "BceWithLogits", {logits},
                    [logits = GradRef(logits), x = logits.value(), targets](const Tensor& g) {
    AccumulateGrad(logits, ops::BceWithLogitsBackward(g, x, targets), "BceWithLogits");
  });
}

}  // namespace fg::ag
