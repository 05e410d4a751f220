// GCN (Kipf & Welling, ICLR 2017) as NAU UDFs: a DNFA model.
//   NeighborSelection: N(v) ∪ {v}, each with weight 1 / sqrt(d̂_v d̂_u), d̂ = degree + 1.
//   Aggregation:       weighted sum (Â h).
//   Update:            h' = σ(Â h W + b); no activation on the last layer.
// The projection W runs before aggregation when it narrows the features (Â(hW) = (Âh)W).
#include <cmath>

#include "flexgraph/autograd/functions.h"
#include "nau/dropout_linear.h"
#include "nau/model.h"

namespace fg::udf {
namespace {

class GcnLayer : public nau::Layer {
 public:
  GcnLayer(int64_t in, int64_t out, bool last, float dropout, bool drop_input, uint64_t seed,
           int index)
      : fc_(in, out, /*bias=*/false, nn::Init::kGlorot, seed, index),
        last_(last),
        dropout_(drop_input ? dropout : 0.0f),
        project_first_(out < in) {
    AddChild("linear", fc_);
    bias_ = AddParameter("bias", Tensor::Zeros({out}));
  }

  hdg::SchemaTree Schema() const override { return hdg::SchemaTree::Flat("neighbor", true); }
  std::string SelectionKey() const override { return "gcn-normalized-self-loops"; }

  bool LocalSelection() const override { return true; }
  void SelectNeighbors(const nau::SelectContext& ctx, int32_t v,
                       hdg::NeighborWriter& out) const override {
    // v in its place among its (sorted) neighbours: on an undirected graph Â is then symmetric
    // entry for entry, and backward passes use it as its own transpose.
    const auto nbrs = ctx.InNeighbors(v);
    const float dv = static_cast<float>(nbrs.size() + 1);
    bool self = false;
    for (int32_t u : nbrs) {
      if (!self && u > v) {
        out.Add(v, 1.0f / dv);
        self = true;
      }
      const float du = static_cast<float>(ctx.InDegree(u) + 1);
      out.Add(u, 1.0f / std::sqrt(dv * du));
    }
    if (!self) out.Add(v, 1.0f / dv);
  }

  ag::Var Message(nau::LayerContext& ctx, const ag::Var& h) override {
    if (project_first_) return nau::DropoutLinear(ctx, h, ctx.table_global_ids, fc_, dropout_, 0);
    return ctx.Dropout(h, dropout_, 0, ctx.table_global_ids);
  }

  nau::Aggregator LevelAggregator(int) const override { return nau::Aggregator::WeightedSum(); }

  // Projecting first moves the transform from the roots to the input rows and aggregates out-wide
  // rows.
  nau::LayerCost Cost(int64_t, int64_t) const override {
    nau::LayerCost c = Layer::Cost(fc_.in_features(), fc_.out_features());
    if (project_first_) {
      c.level_widths = {c.out};
      c.message_flops = c.update_flops;
      c.update_flops = 0;
    }
    return c;
  }

  ag::Var Update(nau::UpdateContext&, const ag::Var&, const ag::Var& nbr) override {
    if (last_) return ag::AddBias(project_first_ ? nbr : fc_.Forward(nbr), bias_);
    return project_first_ ? ag::BiasRelu(nbr, bias_) : ag::LinearBiasRelu(nbr, fc_.weight(), bias_);
  }

 private:
  nn::Linear fc_;
  ag::Var bias_;
  bool last_;
  float dropout_;
  bool project_first_;
};

std::unique_ptr<nau::Model> MakeGcn() {
  return std::make_unique<nau::StackedModel>(
      [](const nau::ModelSpec& spec, int i, int64_t in, int64_t out,
         bool last) -> absl::StatusOr<std::unique_ptr<nau::Layer>> {
        auto input_dropout = spec.options.Int("input_dropout");
        if (!input_dropout.ok()) return input_dropout.status();
        return std::make_unique<GcnLayer>(in, out, last, spec.dropout, i > 0 || *input_dropout,
                                          spec.seed, i);
      });
}

}  // namespace

// Kipf & Welling's Cora setup.
FG_REGISTER_MODEL(gcn, "GCN: symmetric-normalised neighbourhood sum with self loops (Kipf & Welling)",
                  R"pb(model { hidden: 16 layers: 2 dropout: 0.5 }
                       train { epochs: 200 lr: 0.01 weight_decay: 5e-4 }
                       dataset { normalize_features: true })pb",
                  {{"input_dropout", nau::OptionType::kInt, "1",
                    "dropout on layer 0's input: 1 (Kipf & Welling) or 0"}},
                  MakeGcn);

}  // namespace fg::udf
