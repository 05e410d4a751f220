// GIN (Xu et al., ICLR 2019) as NAU UDFs: a DNFA model.
//   NeighborSelection: the in-neighbours N(v).
//   Aggregation:       sum.
//   Update:            h' = MLP((1 + ε) h_v + Σ_{u∈N(v)} h_u), MLP = Linear-ReLU-Linear (ε = 0, GIN-0).
// On a set of graphs with a class per graph (graph classification), the last layer's per-vertex
// scores are read out per graph (option `readout`: sum, as the paper's GIN-0, mean or max).
#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/status.h"
#include "nau/model.h"

namespace fg::udf {
namespace {

class GinLayer : public nau::Layer {
 public:
  GinLayer(int64_t in, int64_t hidden, int64_t out, bool last, float dropout, float eps,
           uint64_t seed, int index)
      : fc1_(in, hidden, true, nn::Init::kGlorot, seed, 2 * index),
        fc2_(hidden, out, true, nn::Init::kGlorot, seed, 2 * index + 1),
        last_(last),
        dropout_(dropout),
        eps_(eps) {
    AddChild("mlp.0", fc1_);
    AddChild("mlp.1", fc2_);
  }

  hdg::SchemaTree Schema() const override { return hdg::SchemaTree::Flat("neighbor"); }
  std::string SelectionKey() const override { return "in-neighbors"; }

  bool LocalSelection() const override { return true; }
  void SelectNeighbors(const nau::SelectContext& ctx, int32_t v,
                       hdg::NeighborWriter& out) const override {
    for (int32_t u : ctx.InNeighbors(v)) out.Add(u);
  }

  ag::Var Message(nau::LayerContext& ctx, const ag::Var& h) override {
    return ctx.Dropout(h, dropout_, 0, ctx.table_global_ids);
  }

  nau::Aggregator LevelAggregator(int) const override { return nau::Aggregator::Sum(); }

  // Update is a two-layer MLP per root.
  nau::LayerCost Cost(int64_t, int64_t) const override {
    nau::LayerCost c = Layer::Cost(fc1_.in_features(), fc2_.out_features());
    c.update_flops = 2.0 * fc1_.in_features() * fc1_.out_features() +
                     2.0 * fc2_.in_features() * fc2_.out_features();
    return c;
  }

  ag::Var Update(nau::UpdateContext& ctx, const ag::Var& self, const ag::Var& nbr) override {
    ag::Var s = ctx.Dropout(self, dropout_, 0, ctx.root_global_ids);
    ag::Var z = ag::Add(ag::Scale(s, 1.0f + eps_), nbr);
    ag::Var h = fc1_.ForwardRelu(z);
    return last_ ? fc2_.Forward(h) : fc2_.ForwardRelu(h);
  }

 private:
  nn::Linear fc1_, fc2_;
  bool last_;
  float dropout_, eps_;
};

nau::StackedModel::LayerFactory GinLayers() {
  return [](const nau::ModelSpec& spec, int i, int64_t in, int64_t out,
            bool last) -> absl::StatusOr<std::unique_ptr<nau::Layer>> {
    auto eps = spec.options.Float("eps");
    if (!eps.ok()) return eps.status();
    return std::make_unique<GinLayer>(in, spec.hidden, out, last, spec.dropout,
                                      static_cast<float>(*eps), spec.seed, i);
  };
}

class Gin : public nau::StackedModel {
 public:
  Gin() : StackedModel(GinLayers()) {}

  absl::Status Build(const nau::ModelSpec& spec) override {
    const graph::Dataset& ds = *spec.dataset;
    graphs_ = ds.IsGraphSet() && ds.labels.empty() && !ds.graphs->edge_labels.defined();
    const std::string& readout = spec.options.String("readout");
    if (readout == "sum") {
      readout_ = ops::SegmentReduceOp::kSum;
    } else if (readout == "mean") {
      readout_ = ops::SegmentReduceOp::kMean;
    } else if (readout == "max") {
      readout_ = ops::SegmentReduceOp::kMax;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("readout: '", readout, "' is not sum, mean or max"));
    }
    return StackedModel::Build(spec);
  }
  nau::Task task() const override {
    return graphs_ ? nau::Task::kGraphClassification : nau::Task::kNodeClassification;
  }
  // Graph classification: one row per graph of the (batch's) set.
  ag::Var Head(nau::LayerContext&, const nau::ModelSpec& spec, const ag::Var& h) override {
    return graphs_ ? ag::SegmentReduce(spec.dataset->graphs->node_offsets, h, readout_) : h;
  }

 private:
  bool graphs_ = false;
  ops::SegmentReduceOp readout_ = ops::SegmentReduceOp::kSum;
};

}  // namespace

FG_REGISTER_MODEL(gin, "GIN-0: sum aggregation and a two-layer MLP update (Xu et al.)",
                  R"pb(model { hidden: 16 layers: 2 dropout: 0.5 }
                       train { epochs: 200 lr: 0.01 weight_decay: 5e-4 }
                       dataset { normalize_features: true })pb",
                  {{"eps", nau::OptionType::kFloat, "0",
                    "GIN's epsilon: a vertex's own features weigh 1 + eps in the sum"},
                   {"readout", nau::OptionType::kString, "sum",
                    "graph classification: the last layer's scores per graph, sum, mean or max"}},
                  [] { return std::make_unique<Gin>(); });

}  // namespace fg::udf
