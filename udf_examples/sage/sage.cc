// GraphSAGE-mean (Hamilton et al., NeurIPS 2017) as NAU UDFs: a DNFA model.
//   NeighborSelection: the in-neighbours N(v).
//   Aggregation:       mean.
//   Update:            h' = σ(h_v W_self + mean_{u∈N(v)} h_u W_neigh + b).
#include "flexgraph/autograd/functions.h"
#include "nau/dropout_linear.h"
#include "nau/model.h"

namespace fg::udf {
namespace {

class SageLayer : public nau::Layer {
 public:
  SageLayer(int64_t in, int64_t out, bool last, float dropout, uint64_t seed, int index)
      : self_(in, out, /*bias=*/true, nn::Init::kGlorot, seed, 2 * index),
        neigh_(in, out, /*bias=*/false, nn::Init::kGlorot, seed, 2 * index + 1),
        last_(last),
        dropout_(dropout),
        project_first_(out < in) {
    AddChild("self", self_);
    AddChild("neigh", neigh_);
  }

  hdg::SchemaTree Schema() const override { return hdg::SchemaTree::Flat("neighbor"); }
  std::string SelectionKey() const override { return "in-neighbors"; }

  bool LocalSelection() const override { return true; }
  void SelectNeighbors(const nau::SelectContext& ctx, int32_t v,
                       hdg::NeighborWriter& out) const override {
    for (int32_t u : ctx.InNeighbors(v)) out.Add(u);
  }

  ag::Var Message(nau::LayerContext& ctx, const ag::Var& h) override {
    if (project_first_) return nau::DropoutLinear(ctx, h, ctx.table_global_ids, neigh_, dropout_, 0);
    return ctx.Dropout(h, dropout_, 0, ctx.table_global_ids);
  }

  nau::Aggregator LevelAggregator(int) const override { return nau::Aggregator::Mean(); }

  // Two in x out transforms: the self one per root, the neighbour one per root or, projecting
  // first, per input row (then out-wide rows are aggregated).
  nau::LayerCost Cost(int64_t, int64_t) const override {
    nau::LayerCost c = Layer::Cost(self_.in_features(), self_.out_features());
    if (project_first_) {
      c.level_widths = {c.out};
      c.message_flops = c.update_flops;
    } else {
      c.update_flops *= 2;
    }
    return c;
  }

  ag::Var Update(nau::UpdateContext& ctx, const ag::Var& self, const ag::Var& nbr) override {
    // The same counter-based mask as Message: a vertex's dropout is identical in both roles.
    // The bias joins after both terms, fused with the ReLU.
    if (!project_first_) {
      return nau::DropoutMatMul(ctx, self, ctx.root_global_ids, self_.weight(), self_.bias(), dropout_, 0, nbr,
                                neigh_.weight(), /*relu=*/!last_);
    }
    ag::Var h = ag::Add(nau::DropoutMatMul(ctx, self, ctx.root_global_ids, self_.weight(), ag::Var(), dropout_, 0), nbr);
    return last_ ? ag::AddBias(h, self_.bias()) : ag::BiasRelu(h, self_.bias());
  }

 private:
  nn::Linear self_, neigh_;
  bool last_;
  float dropout_;
  bool project_first_;
};

std::unique_ptr<nau::Model> MakeSage() {
  return std::make_unique<nau::StackedModel>(
      [](const nau::ModelSpec& spec, int i, int64_t in, int64_t out,
         bool last) -> absl::StatusOr<std::unique_ptr<nau::Layer>> {
        return std::make_unique<SageLayer>(in, out, last, spec.dropout, spec.seed, i);
      });
}

}  // namespace

FG_REGISTER_MODEL(sage, "GraphSAGE-mean: own features plus the mean of in-neighbours (Hamilton et al.)",
                  R"pb(model { hidden: 16 layers: 2 dropout: 0.5 }
                       train { epochs: 200 lr: 0.01 weight_decay: 5e-4 }
                       dataset { normalize_features: true })pb",
                  {}, MakeSage);

}  // namespace fg::udf
