// SGC (Wu et al., ICML 2019) as an out-of-tree NAU model, loaded with --udf_library.
//   NeighborSelection: N(v) ∪ {v} with symmetric normalisation (as GCN).
//   Aggregation:       weighted sum, K times (one parameter-free layer per hop).
//   Update:            identity on hidden hops; the last hop applies one linear classifier.
#include <cmath>

#include "flexgraph/autograd/functions.h"
#include "nau/model.h"

namespace sgc {
namespace {

using namespace fg;  // NOLINT: a user's model file

class Hop : public nau::Layer {
 public:
  Hop(int64_t in, int64_t out, bool last, uint64_t seed) : last_(last) {
    if (last_) {
      fc_ = nn::Linear(in, out, true, nn::Init::kGlorot, seed);
      AddChild("linear", fc_);
    }
  }
  hdg::SchemaTree Schema() const override { return hdg::SchemaTree::Flat("neighbor", true); }
  std::string SelectionKey() const override { return "sgc-normalized"; }
  bool LocalSelection() const override { return true; }
  void SelectNeighbors(const nau::SelectContext& ctx, int32_t v,
                       hdg::NeighborWriter& out) const override {
    const auto nbrs = ctx.InNeighbors(v);
    const float dv = static_cast<float>(nbrs.size() + 1);
    out.Add(v, 1.0f / dv);
    for (int32_t u : nbrs) out.Add(u, 1.0f / std::sqrt(dv * (ctx.InDegree(u) + 1)));
  }
  nau::Aggregator LevelAggregator(int) const override { return nau::Aggregator::WeightedSum(); }
  ag::Var Update(nau::UpdateContext&, const ag::Var&, const ag::Var& nbr) override {
    return last_ ? fc_.Forward(nbr) : nbr;
  }

 private:
  bool last_;
  nn::Linear fc_;
};

}  // namespace

FG_REGISTER_MODEL(sgc, "SGC: K parameter-free propagation hops, then one linear classifier",
                  // layers = hops
                  R"pb(model { layers: 2 dropout: 0 }
                       train { epochs: 100 lr: 0.2 weight_decay: 5e-5 })pb",
                  {}, [] {
                    return std::make_unique<nau::StackedModel>(
                        [](const nau::ModelSpec& spec, int i, int64_t in, int64_t out,
                           bool last) -> absl::StatusOr<std::unique_ptr<nau::Layer>> {
                          // Hidden hops keep the input width.
                          const int64_t features = spec.FeatureDim(spec.target_type);
                          return std::make_unique<Hop>(features, last ? spec.num_classes : features,
                                                       last, spec.seed);
                        });
                  });

}  // namespace sgc
