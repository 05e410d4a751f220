// The Interaction Network edge classifier as Exa.TrkX uses it (Battaglia et al. 2016; Ju et al.,
// "Performance of a geometric deep learning pipeline for HL-LHC particle tracking", 2021), as NAU
// UDFs with an edge state:
//   encoders:   h = MLP_node(x),  e = MLP_edge(edge features)
//   K layers:   NeighborSelection: the in-neighbours (one HDG entry per edge, both directions when
//               the dataset stores reverse edges, so a hit hears its inner and outer neighbours);
//               with edges=once, each edge once as stored (inner -> outer), its one state
//               aggregated into both hits (destination blocks, then source blocks): half the
//               edge rows, for large events;
//               edge update: e' = MLP_e([h_src, h_dst, e]) + e;
//               (the first product split over the three parts: no [entries, 3d] rows);
//               Aggregation: the options' reductions (sum, mean, max, std) of e' at each hit;
//               Update: h' = MLP_n([h, aggregated]) + h
//   head:       logit = MLP_out([h_src, h_dst, e]) per entry (the task averages an edge's entries).
// Every MLP is Linear-LayerNorm-SiLU blocks (mlp_layers of them, mlp.h); the head's last Linear is bare.
// On tracking events (graph/tracking.h's layout: node_info "layer", node features (r, phi, z)) the
// node encoder reads the hits' phi as zero unless absolute_phi=1: the model then cannot tell an event
// from its rotation about the beam axis (the edges keep dphi), and learns more from few events.
#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/checkpoint.h"
#include "flexgraph/autograd/edge_functions.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/graph/graph_set.h"
#include "flexgraph/graph/tracking.h"
#include "flexgraph/nn/layer_norm.h"
#include "flexgraph/ops/ops.h"
#include "nau/model.h"
#include "udf_examples/interaction/mlp.h"

namespace fg::udf {
namespace {

struct InteractionOptions {
  int64_t hidden = 128;
  int blocks = 2;
  bool layer_norm = true;
  bool once = false;  // edges=once
  std::vector<ag::EdgeReduce> aggregation;
};

// The positions in `entries` (Csr entries of `ds`; undefined: every entry) of edges as stored
// (not reversed, not added loops), in order.
std::vector<int32_t> StoredPositions(const graph::Dataset& ds, const Tensor& entries) {
  const graph::GraphSet& gs = *ds.graphs;
  const int64_t n = entries.defined() ? entries.numel() : gs.entry_edges.numel();
  std::vector<int32_t> out;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t e = gs.entry_edges.i64()[entries.defined() ? entries.i32()[j] : j];
    if (e >= 0 && e < gs.num_edges()) out.push_back(static_cast<int32_t>(j));
  }
  return out;
}

class InteractionLayer : public nau::Layer {
 public:
  InteractionLayer(const InteractionOptions& o, uint64_t seed, int index)
      : edge_mlp_(3 * o.hidden, o.hidden, o.hidden, o.blocks, o.layer_norm, false, seed, 10 + 2 * index),
        node_mlp_((1 + (o.once ? 2 : 1) * o.aggregation.size()) * o.hidden, o.hidden, o.hidden,
                  o.blocks, o.layer_norm, false, seed, 11 + 2 * index),
        aggregation_(o.aggregation),
        once_(o.once) {
    AddChild("edge_mlp", edge_mlp_);
    AddChild("node_mlp", node_mlp_);
  }

  hdg::SchemaTree Schema() const override { return hdg::SchemaTree::Flat("neighbor"); }
  std::string SelectionKey() const override { return once_ ? "stored-in-edges" : "in-neighbors"; }
  bool LocalSelection() const override { return true; }
  void SelectNeighbors(const nau::SelectContext& ctx, int32_t v,
                       hdg::NeighborWriter& out) const override {
    if (!once_) {
      for (int32_t u : ctx.InNeighbors(v)) out.Add(u);
      return;
    }
    const Csr& a = ctx.dataset().Adjacency();
    const graph::GraphSet& gs = *ctx.dataset().graphs;
    for (int64_t k = a.row_ptr()[v]; k < a.row_ptr()[v + 1]; ++k) {
      const int64_t e = gs.entry_edges.i64()[k];
      if (e >= 0 && e < gs.num_edges()) out.Add(a.col()[k]);
    }
  }
  nau::Aggregator LevelAggregator(int) const override { return nau::Aggregator::Sum(); }

  bool UpdatesEdges() const override { return true; }
  ag::Var UpdateEdges(nau::LayerContext&, const ag::Var& in, const ag::Var& e) override {
    return ag::Add(edge_mlp_.Forward(in), e);
  }
  ag::Var UpdateEdgesFrom(nau::LayerContext&, const SparseMatrixPtr& a, const ag::Var& messages,
                          const ag::Var& self, const ag::Var& e) override {
    return ag::Add(edge_mlp_.ForwardEdges(a, messages, self, e), e);
  }
  std::vector<ag::EdgeReduce> EdgeAggregation() const override { return aggregation_; }
  ag::EdgeSide EdgeAggregationSide() const override {
    return once_ ? ag::EdgeSide::kBoth : ag::EdgeSide::kDestination;
  }
  ag::Var Update(nau::UpdateContext&, const ag::Var& self, const ag::Var& nbr) override {
    return ag::Add(node_mlp_.Forward(ag::Concat({self, nbr})), self);
  }

 private:
  Mlp edge_mlp_, node_mlp_;
  std::vector<ag::EdgeReduce> aggregation_;
  bool once_;
};

class InteractionNetwork : public nau::Model {
 public:
  absl::Status Build(const nau::ModelSpec& spec) override {
    const graph::Dataset& ds = *spec.dataset;
    if (!ds.IsGraphSet() || !ds.graphs->edge_feat.defined() || !ds.graph.IsHomogeneous()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "interaction: dataset ", ds.name, " is not a set of graphs with edge features"));
    }
    InteractionOptions o;
    o.hidden = spec.hidden;
    FG_ASSIGN_OR_RETURN(int64_t blocks, spec.options.Int("mlp_layers"));
    FG_ASSIGN_OR_RETURN(int64_t norm, spec.options.Int("layernorm"));
    FG_ASSIGN_OR_RETURN(o.aggregation,
                        ag::ParseEdgeReductions(spec.options.String("aggregation"), "aggregation"));
    if (blocks < 1 || blocks > 8) {
      return absl::InvalidArgumentError(absl::StrCat("mlp_layers: ", blocks, " outside [1, 8]"));
    }
    if (spec.layers < 1) return absl::InvalidArgumentError("layers (iterations) must be positive");
    if (spec.num_classes < 1) return absl::InvalidArgumentError("interaction: no edge classes");
    o.blocks = static_cast<int>(blocks);
    o.layer_norm = norm != 0;
    const std::string recompute = spec.options.String("recompute");
    if (recompute != "auto" && recompute != "1" && recompute != "0") {
      return absl::InvalidArgumentError(absl::StrCat("recompute: '", recompute, "' is not auto, 1 or 0"));
    }
    recompute_mode_ = recompute;
    const std::string edges = spec.options.String("edges");
    if (edges != "both" && edges != "once") {
      return absl::InvalidArgumentError(absl::StrCat("edges: '", edges, "' is not both or once"));
    }
    o.once = once_ = edges == "once";
    hidden_ = o.hidden;
    const int64_t f = spec.FeatureDim("node"), fe = ds.graphs->edge_feat.dim(1);
    FG_ASSIGN_OR_RETURN(int64_t absolute_phi, spec.options.Int("absolute_phi"));
    if (absolute_phi != 0 && absolute_phi != 1) {
      return absl::InvalidArgumentError(absl::StrCat("absolute_phi: ", absolute_phi, " is not 0 or 1"));
    }
    phi_mask_ = Tensor();
    if (absolute_phi == 0 && graph::HasTrackingLayout(ds)) {
      phi_mask_ = Tensor::FromVector(std::vector<float>{1, 0, 0, 0, 0, 0, 0, 0, 1}).Reshape({3, 3});
    }
    node_encoder_ = std::make_unique<Mlp>(f, o.hidden, o.hidden, o.blocks, o.layer_norm, false, spec.seed, 1);
    edge_encoder_ = std::make_unique<Mlp>(fe, o.hidden, o.hidden, o.blocks, o.layer_norm, false, spec.seed, 2);
    head_ = std::make_unique<Mlp>(3 * o.hidden, o.hidden, spec.num_classes, o.blocks, o.layer_norm, true,
                                  spec.seed, 3);
    AddChild("node_encoder", *node_encoder_);
    AddChild("edge_encoder", *edge_encoder_);
    AddChild("head", *head_);
    layers_.clear();
    for (int i = 0; i < spec.layers; ++i) {
      layers_.push_back(std::make_unique<InteractionLayer>(o, spec.seed, i));
    }
    AdoptLayerParameters();
    return absl::OkStatus();
  }
  int num_layers() const override { return static_cast<int>(layers_.size()); }
  nau::Layer& layer(int i) override { return *layers_[i]; }
  nau::Task task() const override { return nau::Task::kEdgeClassification; }

  ag::Var Input(nau::LayerContext& ctx, const nau::ModelSpec& spec) override {
    ag::Var x(spec.dataset->features.at("node"));
    if (phi_mask_.defined()) {  // (r, phi, z) -> (r, 0, z)
      if (phi_mask_.device() != x.value().device()) phi_mask_ = phi_mask_.To(x.value().device());
      x = ag::MatMul(x, ag::Var(phi_mask_));
    }
    return node_encoder_->Forward(x);
  }
  ag::Var InitialEdgeState(nau::LayerContext& ctx, const nau::ModelSpec& spec, const Tensor& entry_features) override {
    Tensor features = entry_features;
    if (once_) {  // the stored entries' rows, and where each listed entry finds its edge's row
      const std::vector<int32_t> stored = StoredPositions(*spec.dataset, ctx.entries);
      features = ops::GatherRows(entry_features, Tensor::FromVector(stored).To(entry_features.device()));
      const graph::GraphSet& gs = *spec.dataset->graphs;
      auto edge_of = [&](int64_t j) {
        return gs.entry_edges.i64()[ctx.entries.defined() ? ctx.entries.i32()[j] : j];
      };
      const int64_t m = gs.num_edges(), none = static_cast<int64_t>(stored.size());
      std::vector<int32_t> row_of_edge(m, static_cast<int32_t>(none));
      for (size_t j = 0; j < stored.size(); ++j) row_of_edge[edge_of(stored[j])] = static_cast<int32_t>(j);
      std::vector<int32_t> rows(ctx.entries.defined() ? ctx.entries.numel() : gs.entry_edges.numel());
      for (size_t j = 0; j < rows.size(); ++j) {
        const int64_t e = edge_of(static_cast<int64_t>(j));
        rows[j] = e < 0 ? static_cast<int32_t>(none) : row_of_edge[e % m];  // none: a zero row
      }
      entry_rows_ = Tensor::FromVector(rows).To(entry_features.device());
    }
    // Per batch: auto recomputes when keeping every activation would take more than a quarter of
    // the memory still available (about 9 rows of [entries, hidden] per iteration and 13 for the
    // encoders and head, measured), so small events train at full speed and large ones fit.
    const double kept = static_cast<double>(features.rows()) * hidden_ * 4.0 * (9.0 * static_cast<double>(layers_.size()) + 13.0);
    recompute_ = recompute_mode_ == "1" ||
                 (recompute_mode_ == "auto" && kept > 0.25 * static_cast<double>(AvailableMemoryBytes()));
    return Maybe(
        [this](const std::vector<ag::Var>& in) { return std::vector<ag::Var>{edge_encoder_->Forward(in[0])}; },
        {ag::Var(features)});
  }
  ag::Var Head(nau::LayerContext& ctx, const nau::ModelSpec&, const ag::Var& h) override {
    ag::Var out = Maybe(
        [this, a = ctx.edge_matrix](const std::vector<ag::Var>& in) {
          // The roots are h's first rows (Model::Head).
          return std::vector<ag::Var>{head_->ForwardEdges(a, in[0], ag::FirstRows(in[0], a->csr().num_rows), in[1])};
        },
        {h, ctx.edge_state});
    if (!once_) return out;
    // Both entries of an edge take its one score; an entry without a stored edge, a zero row.
    const ag::Var none(Tensor::Zeros({1, out.row_width()}, DType::kFloat32, out.value().device()));
    return ag::GatherRows(ag::ConcatRows({out, none}), entry_rows_);
  }
  bool RecomputeLayers() const override { return recompute_; }

 private:
  // fn(in)[0], under ag::Checkpoint with the option recompute.
  ag::Var Maybe(const ag::CheckpointFn& fn, const std::vector<ag::Var>& in) const {
    return recompute_ ? ag::Checkpoint(fn, in)[0] : fn(in)[0];
  }

  std::string recompute_mode_ = "auto";
  int64_t hidden_ = 0;
  bool recompute_ = false;  // this batch's choice
  bool once_ = false;       // edges=once
  Tensor entry_rows_;       // edges=once: per Csr entry of the batch, its edge's row (this batch's)
  Tensor phi_mask_;         // [3, 3] diag(1, 0, 1) on tracking events unless absolute_phi=1
  std::unique_ptr<Mlp> node_encoder_, edge_encoder_, head_;
  std::vector<std::unique_ptr<InteractionLayer>> layers_;
};

}  // namespace

FG_REGISTER_MODEL(
    interaction,
    "Interaction Network edge classifier (Exa.TrkX): node and edge encoders, K edge-state "
    "message-passing layers (edge MLP on [h_src, h_dst, e], node MLP on [h, aggregated edges], "
    "residuals, LayerNorm, SiLU), an edge output head",
    R"pb(model { hidden: 128 layers: 8 dropout: 0 }
         train { epochs: 200 max_steps: 2000 lr: 0.001 batch_size: 1 })pb",
    {{"aggregation", nau::OptionType::kString, "sum",
      "edge messages into hits: comma-separated sum, mean, max, std (concatenated)"},
     {"mlp_layers", nau::OptionType::kInt, "2", "Linear-LayerNorm-SiLU blocks per MLP"},
     {"layernorm", nau::OptionType::kInt, "1", "LayerNorm in the MLPs: 0 or 1"},
     {"recompute", nau::OptionType::kString, "auto",
      "auto: per batch, 1 when keeping every activation would take more than a quarter of the "
      "available memory; 1: keep each iteration's inputs only and recompute its activations in the backward pass "
      "(ag::Checkpoint; the edge encoder and head too), 0: keep every activation"},
     {"absolute_phi", nau::OptionType::kInt, "0",
      "tracking events (node features r, phi, z): 1 feeds the hits' phi to the node encoder as Exa.TrkX does; 0 "
      "reads it as zero, so the model is the same for an event rotated about the beam axis (edges keep dphi)"},
     {"edges", nau::OptionType::kString, "both",
      "both: an edge state per direction of each edge (a hit aggregates its in-entries); once: one "
      "state per edge as stored, aggregated into both its hits (half the edge rows: large events)"},
     {"pos_weight", nau::OptionType::kFloat, "1", "edge task: weight of a true edge in the loss"},
     {"class_weights", nau::OptionType::kString, "",
      "edge task, multi-class: comma-separated weight per class"},
     {"cut", nau::OptionType::kFloat, "0.5", "edge task: an edge is kept when its score > cut"}},
    [] { return std::make_unique<InteractionNetwork>(); });

}  // namespace fg::udf
