#include "nau/executor.h"

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/timer.h"

namespace fg::nau {
namespace {

bool UniformArity(const hdg::HdgLevel& l) {
  return l.block_arity.size() == 1 && l.block_arity[0] > 0;
}

}  // namespace

ag::Var GatherRoots(const hdg::Hdg& hdg, const ag::Var& x, LayerContext* ctx) {
  const Tensor& roots = hdg.roots();
  if (hdg.roots_are_first_rows()) {  // a prefix of x's rows (a mini-batch block's table): a view
    if (roots.numel() == x.rows()) return x;
    ag::Var self = ag::FirstRows(x, roots.numel());
    if (ctx != nullptr) ctx->NoteRoots(x, self, Tensor());
    return self;
  }
  const Tensor index = roots.To(x.value().device());
  ag::Var self = ag::GatherRows(x, index);
  if (ctx != nullptr) ctx->NoteRoots(x, self, index);
  return self;
}

std::vector<LevelPlan> HybridExecutor::Plan(const hdg::Hdg& hdg, const Layer& layer) const {
  std::vector<LevelPlan> plan;
  for (int k = 1; k <= hdg.num_levels(); ++k) {
    const Aggregator agg = layer.LevelAggregator(k);
    const hdg::HdgLevel& l = hdg.level(k);
    LevelPlan p;
    p.level = k;
    p.aggregator = agg.name();
    p.reduction = agg.reduction();
    const bool uniform = UniformArity(l);
    const std::string arity =
        uniform ? absl::StrCat("uniform arity ", l.block_arity[0]) : "variable arity";
    if (agg.reduction() == Reduction::kCustom) {
      p.strategy = agg.custom_strategy();
      p.reason = absl::StrCat("custom aggregator declares ", StrategyName(p.strategy));
    } else if (agg.reduction() == Reduction::kMax) {
      p.strategy = Strategy::kGraph;
      p.reason = "max keeps an argmax per output for backward";
    } else if (override_.has_value() && (*override_ != Strategy::kDense || uniform) &&
               *override_ != Strategy::kGraph) {
      p.strategy = *override_;
      p.reason = absl::StrCat("override (", arity, ")");
    } else if (uniform && l.block_arity[0] <= 4) {
      p.strategy = Strategy::kDense;
      p.reason = absl::StrCat(arity, ": batched dense reduction");
    } else {
      p.strategy = Strategy::kSparse;
      p.reason = uniform ? absl::StrCat(arity, ": SpMM streams rows without materialising [n, k, d]")
                         : absl::StrCat(arity, ": SpMM over the level's CSR");
    }
    plan.push_back(p);
  }
  return plan;
}

std::string ExecStats::Shares() const {
  const double total = Total();
  if (total <= 0) return "";
  auto pct = [&](double x) { return absl::StrCat(static_cast<int>(100.0 * x / total + 0.5), "%"); };
  return absl::StrCat("selection ", pct(selection), " | message ", pct(message), " | aggregation ",
                      pct(aggregation), " | update ", pct(update), " | loss ", pct(loss),
                      " | backward ", pct(backward), " | optimizer ", pct(optimizer));
}

std::string HybridExecutor::Explain(const std::vector<LevelPlan>& plan) {
  std::string out;
  for (const LevelPlan& p : plan) {
    absl::StrAppend(&out, "  level ", p.level, " (", p.aggregator, "): ", StrategyName(p.strategy),
                    " - ", p.reason, "\n");
  }
  return out;
}

ag::Var HybridExecutor::Aggregate(const hdg::Hdg& hdg, const std::vector<LevelPlan>& plan,
                                  const Layer& layer, const ag::Var& messages,
                                  const ag::Var& self, LayerContext& ctx) const {
  ag::Var x = messages;
  for (int k = 1; k <= hdg.num_levels(); ++k) {
    const LevelPlan& p = plan[k - 1];
    const hdg::HdgLevel& l = hdg.level(k);
    const Aggregator agg = layer.LevelAggregator(k);
    FG_CHECK(x.rows() == l.csr().num_cols)
        << "level " << k << " expects " << l.csr().num_cols << " child rows, got "
        << x.value().ShapeString();
    if (agg.reduction() == Reduction::kCustom) {
      LevelInput in{&hdg, k, x, self, &ctx, p.strategy};
      x = agg.fn()(in);
      FG_CHECK(x.rows() == l.num_nodes())
          << "custom aggregator '" << agg.name() << "' at level " << k << " returned "
          << x.value().ShapeString() << " for " << l.num_nodes() << " nodes";
      continue;
    }
    ag::Var w;
    if (agg.reduction() == Reduction::kWeightedSum) {
      FG_CHECK(l.weights.defined()) << "aggregator '" << agg.name() << "' at level " << k
                                    << " needs a weighted schema";
      w = ag::Var(agg.normalize_weights() ? l.NormalizedWeights() : l.weights);
    }
    switch (p.strategy) {
      case Strategy::kGraph:
        FG_CHECK(agg.reduction() == Reduction::kMax) << "graph strategy for " << agg.name();
        x = ag::SpmmMax(l.matrix, x);
        break;
      case Strategy::kSparse:
        x = ag::Spmm(l.matrix, x,
                     agg.reduction() == Reduction::kMean ? ops::SpmmReduce::kMean
                                                         : ops::SpmmReduce::kSum,
                     w);
        break;
      case Strategy::kDense: {
        LevelInput in{&hdg, k, x, self, &ctx, p.strategy};
        ag::Var g = in.GatherBlock(0);  // [n, k, d]
        const int64_t n = g.dim(0), arity = g.dim(1), d = g.dim(2);
        ag::Var flat = ag::Reshape(g, {n * arity, d});
        if (w.defined()) flat = ag::ScaleRows(flat, w);
        std::vector<int64_t> off(n + 1);
        for (int64_t i = 0; i <= n; ++i) off[i] = i * arity;
        x = ag::SegmentReduce(Tensor::FromVector(off).To(flat.value().device()), flat,
                              agg.reduction() == Reduction::kMean ? ops::SegmentReduceOp::kMean
                                                                  : ops::SegmentReduceOp::kSum);
        break;
      }
    }
  }
  return x;
}

ag::Var HybridExecutor::AggregateEdges(const hdg::Hdg& hdg, Layer& layer, const ag::Var& messages,
                                       const ag::Var& self, LayerContext& ctx) const {
  return AggregateEdges(hdg, layer, messages, self, ctx, layer.EdgeAggregationSide());
}

ag::Var HybridExecutor::AggregateEdges(const hdg::Hdg& hdg, Layer& layer, const ag::Var& messages,
                                       const ag::Var& self, LayerContext& ctx, ag::EdgeSide side) const {
  FG_CHECK(hdg.num_levels() == 1) << "an edge-state layer needs a flat HDG, got " << hdg.num_levels()
                                  << " levels";
  const SparseMatrixPtr& a = hdg.level(1).matrix;
  FG_CHECK(!ctx.edge_state.defined() || ctx.edge_state.rows() == a->csr().nnz())
      << "edge state of " << ctx.edge_state.rows() << " rows for " << a->csr().nnz() << " entries";
  ctx.edge_state = layer.UpdateEdgesFrom(ctx, a, messages, self, ctx.edge_state);
  ctx.edge_matrix = a;
  return ag::AggregateEdges(a, ctx.edge_state, layer.EdgeAggregation(), side);
}

ag::Var HybridExecutor::Run(const hdg::Hdg& hdg, const std::vector<LevelPlan>& plan, Layer& layer,
                            const ag::Var& input, LayerContext& ctx) const {
  NoteProgress();
  double* t_msg = ctx.stats ? &ctx.stats->message : nullptr;
  double* t_agg = ctx.stats ? &ctx.stats->aggregation : nullptr;
  double* t_upd = ctx.stats ? &ctx.stats->update : nullptr;
  ag::Var messages, self, nbr;
  {
    ScopedTimer timer(t_msg);
    messages = layer.Message(ctx, input);
    self = GatherRoots(hdg, input, &ctx);
  }
  {
    ScopedTimer timer(t_agg);
    nbr = layer.UpdatesEdges() ? AggregateEdges(hdg, layer, messages, self, ctx)
                               : Aggregate(hdg, plan, layer, messages, self, ctx);
  }
  ScopedTimer timer(t_upd);
  if (ctx.capture_nbr != nullptr) *ctx.capture_nbr = nbr;
  return layer.Update(ctx, self, nbr);
}

}  // namespace fg::nau
