// functions.h's sparse and segment ops: SpMM, SDDMM and the segment softmax and reductions,
// each with its backward.
#include "flexgraph/autograd/functions.h"

namespace fg::ag {

using ops::SpmmReduce;

Var Spmm(const SparseMatrixPtr& a, const Var& x, SpmmReduce reduce, const Var& edge_w) {
  Tensor w = edge_w.defined() ? edge_w.value() : Tensor();
  Tensor y = ops::Spmm(a->csr(), x.value(), reduce, w);
  // x's gradient needs the edge weights; the weights' gradient needs x.
  Tensor xv = edge_w.requires_grad() ? x.value() : Tensor();
  Tensor wv = x.requires_grad() ? w : Tensor();
  return MakeResult(y, "Spmm", {x, edge_w.defined() ? edge_w : Var()},
                    [a, x = GradRef(x), edge_w = GradRef(edge_w), xv, wv, reduce](const Tensor& g) {
    const Csr& c = a->csr();
    Tensor gs = g;  // gradient w.r.t. the un-normalised sum
    if (reduce == SpmmReduce::kMean) gs = ops::ScaleRows(g, a->inv_degree());
    if (x.requires_grad()) {
      Tensor wt;
      if (wv.defined()) {
        wt = wv.device() == Device::kCpu ? a->TransposedValues(wv, !edge_w.requires_grad())
                                         : ops::GatherRows(wv, a->entry_perm());
      }
      AccumulateGrad(x, ops::Spmm(a->transpose(), gs, SpmmReduce::kSum, wt), "Spmm");
    }
    if (edge_w.requires_grad()) {
      const int64_t heads = edge_w.row_width();
      Tensor gw = ops::SddmmDot(c, gs.Reshape({gs.rows(), gs.row_width()}),
                                xv.Reshape({xv.rows(), xv.row_width()}), heads);
      AccumulateGrad(edge_w, gw, "Spmm");
    }
  });
}

Var SpmmMax(const SparseMatrixPtr& a, const Var& x) {
  Tensor argmax;
  Tensor y = ops::SpmmMax(a->csr(), x.value(), &argmax);
  return MakeResult(y, "SpmmMax", {x}, [a, x = GradRef(x), argmax](const Tensor& g) {
    AccumulateGrad(x, ops::SpmmMaxBackward(a->transpose(), argmax, g), "SpmmMax");
  });
}

Var SddmmDot(const SparseMatrixPtr& a, const Var& u, const Var& v, int64_t heads) {
  Tensor y = ops::SddmmDot(a->csr(), u.value(), v.value(), heads);
  Tensor uv = v.requires_grad() ? u.value() : Tensor(), vv = u.requires_grad() ? v.value() : Tensor();
  return MakeResult(y, "SddmmDot", {u, v},
                    [a, u = GradRef(u), v = GradRef(v), uv, vv](const Tensor& g) {
    if (u.requires_grad()) {
      AccumulateGrad(u, ops::Spmm(a->csr(), vv, SpmmReduce::kSum, g), "SddmmDot");
    }
    if (v.requires_grad()) {
      Tensor gt = ops::GatherRows(g, a->entry_perm());
      AccumulateGrad(v, ops::Spmm(a->transpose(), uv, SpmmReduce::kSum, gt), "SddmmDot");
    }
  });
}

Var SddmmAdd(const SparseMatrixPtr& a, const Var& u, const Var& v) {
  Tensor y = ops::SddmmAdd(a->csr(), u.value(), v.value());
  return MakeResult(y, "SddmmAdd", {u, v}, [a, u = GradRef(u), v = GradRef(v)](const Tensor& g) {
    if (u.requires_grad()) {
      AccumulateGrad(u, ops::SegmentReduce(a->csr().offsets, g, ops::SegmentReduceOp::kSum),
                     "SddmmAdd");
    }
    if (v.requires_grad()) {
      Tensor gt = ops::GatherRows(g, a->entry_perm());
      AccumulateGrad(v, ops::SegmentReduce(a->transpose().offsets, gt, ops::SegmentReduceOp::kSum),
                     "SddmmAdd");
    }
  });
}

Var EdgeSoftmax(const SparseMatrixPtr& a, const Var& scores) {
  return SegmentSoftmax(a->csr().offsets, scores);
}

Var SegmentSoftmax(const Tensor& offsets, const Var& scores) {
  Tensor y = ops::SegmentSoftmax(offsets, scores.value());
  return MakeResult(y, "SegmentSoftmax", {scores},
                    [offsets, scores = GradRef(scores), y](const Tensor& g) {
    AccumulateGrad(scores, ops::SegmentSoftmaxBackward(offsets, y, g), "SegmentSoftmax");
  });
}

Var SegmentReduce(const Tensor& offsets, const Var& x, ops::SegmentReduceOp op) {
  Tensor argmax;
  Tensor y = ops::SegmentReduce(offsets, x.value(), op, &argmax);
  return MakeResult(y, "SegmentReduce", {x}, [offsets, x = GradRef(x), op, argmax](const Tensor& g) {
    AccumulateGrad(x, ops::SegmentReduceBackward(offsets, g, op, argmax, x.rows()), "SegmentReduce");
  });
}

}  // namespace fg::ag
