#include "flexgraph/autograd/edge_functions.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/ops/edge_ops.h"

namespace fg::ag {

Var EdgeInput(const SparseMatrixPtr& a, const Var& xs, const Var& xd, const Var& e) {
  Tensor y = ops::EdgeInput(a->csr(), xs.value(), xd.value(), e.defined() ? e.value() : Tensor());
  const int64_t ds = xs.row_width(), dd = xd.row_width();
  return MakeResult(y, "EdgeInput", {xs, xd, e.defined() ? e : Var()},
                    [a, xs = GradRef(xs), xd = GradRef(xd), e = GradRef(e), ds, dd](const Tensor& g) {
    Tensor gxs, gxd, ge;
    const bool want_e = e.defined() && e.requires_grad();
    ops::EdgeInputBackward(a->csr(), a->transpose(), a->entry_perm(), g, ds, dd,
                           xs.requires_grad() ? &gxs : nullptr, xd.requires_grad() ? &gxd : nullptr,
                           want_e ? &ge : nullptr);
    if (xs.requires_grad()) AccumulateGrad(xs, gxs, "EdgeInput");
    if (xd.requires_grad()) AccumulateGrad(xd, gxd, "EdgeInput");
    if (want_e) AccumulateGrad(e, ge, "EdgeInput");
  });
}

Var SegmentStd(const Tensor& offsets, const Var& x, float eps) {
  Tensor y = ops::SegmentStd(offsets, x.value(), eps);
  return MakeResult(y, "SegmentStd", {x},
                    [offsets, x = GradRef(x), xv = x.value(), y](const Tensor& g) {
    AccumulateGrad(x, ops::SegmentStdBackward(offsets, xv, y, g), "SegmentStd");
  });
}

const char* EdgeReduceName(EdgeReduce r) {
  switch (r) {
    case EdgeReduce::kSum: return "sum";
    case EdgeReduce::kMean: return "mean";
    case EdgeReduce::kMax: return "max";
    case EdgeReduce::kStd: return "std";
  }
  return "?";
}

absl::StatusOr<std::vector<EdgeReduce>> ParseEdgeReductions(const std::string& text,
                                                            const std::string& what) {
  std::vector<EdgeReduce> out;
  std::set<std::string> seen;
  for (absl::string_view word : absl::StrSplit(text, ',')) {
    const std::string w(word);
    EdgeReduce r;
    if (w == "sum") {
      r = EdgeReduce::kSum;
    } else if (w == "mean") {
      r = EdgeReduce::kMean;
    } else if (w == "max") {
      r = EdgeReduce::kMax;
    } else if (w == "std") {
      r = EdgeReduce::kStd;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": unknown aggregation '", w, "' in '", text, "' (use sum, mean, max, std)"));
    }
    if (!seen.insert(w).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": '", w, "' twice in '", text, "'"));
    }
    out.push_back(r);
  }
  return out;
}

namespace {

// The reductions of `m`'s rows grouped by `offsets`, concatenated.
std::vector<Var> ReduceGroups(const Tensor& offsets, const Var& m,
                              const std::vector<EdgeReduce>& reduce) {
  std::vector<Var> parts;
  for (EdgeReduce r : reduce) {
    switch (r) {
      case EdgeReduce::kSum: parts.push_back(SegmentReduce(offsets, m, ops::SegmentReduceOp::kSum)); break;
      case EdgeReduce::kMean: parts.push_back(SegmentReduce(offsets, m, ops::SegmentReduceOp::kMean)); break;
      case EdgeReduce::kMax: parts.push_back(SegmentReduce(offsets, m, ops::SegmentReduceOp::kMax)); break;
      case EdgeReduce::kStd: parts.push_back(SegmentStd(offsets, m)); break;
    }
  }
  return parts;
}

}  // namespace

Var AggregateEdges(const SparseMatrixPtr& a, const Var& m, const std::vector<EdgeReduce>& reduce,
                   EdgeSide side) {
  const Csr& c = a->csr();
  FG_CHECK(!reduce.empty()) << "AggregateEdges: no reduction";
  FG_CHECK(m.value().rank() == 2 && m.rows() == c.nnz())
      << "AggregateEdges: messages " << m.value().ShapeString() << " for " << c.nnz() << " entries";
  FG_CHECK(side != EdgeSide::kBoth || c.num_rows == c.num_cols)
      << "AggregateEdges: both ends need a square structure, got " << c.num_rows << " x " << c.num_cols;
  std::vector<Var> parts;
  if (side != EdgeSide::kSource) parts = ReduceGroups(c.offsets, m, reduce);
  if (side != EdgeSide::kDestination) parts.push_back(AggregateEdgeGroups(a->transpose().offsets, a->entry_perm(), m, reduce));
  return parts.size() == 1 ? parts[0] : Concat(parts);
}

Var AggregateEdgeGroups(const Tensor& offsets, const Tensor& order, const Var& m,
                        const std::vector<EdgeReduce>& reduce) {
  FG_CHECK(!reduce.empty()) << "AggregateEdgeGroups: no reduction";
  const std::vector<Var> parts = ReduceGroups(offsets, GatherRows(m, order), reduce);
  return parts.size() == 1 ? parts[0] : Concat(parts);
}

}  // namespace fg::ag
