// The Interaction Network edge classifier as Exa.TrkX uses it (Battaglia et al. 2016; Ju et al.,
// "Performance of a geometric deep learning pipeline for HL-LHC particle tracking", 2021), as NAU
// UDFs with an edge state:
//   encoders:   h = MLP_node(x),  e = MLP_edge(edge features)
//   K layers:   NeighborSelection: the in-neighbours (one HDG entry per edge, both directions when
//               the dataset stores reverse edges, so a hit hears its inner and outer neighbours);
//               edge update: e' = MLP_e([h_src, h_dst, e]) + e;
//               (the first product split over the three parts: no [entries, 3d] rows);
//               Aggregation: the options' reductions (sum, mean, max, std) of e' at each hit;
//               Update: h' = MLP_n([h, aggregated]) + h
//   head:       logit = MLP_out([h_src, h_dst, e]) per entry (the task averages an edge's entries).
// Every MLP is Linear-LayerNorm-SiLU blocks (mlp_layers of them); the head's last Linear is bare.
#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/checkpoint.h"
#include "flexgraph/autograd/edge_functions.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/progress.h"
#include "flexgraph/base/status.h"
#include "flexgraph/nn/layer_norm.h"
#include "nau/model.h"

namespace fg::udf {
namespace {

// Linear-LayerNorm-SiLU blocks in -> hidden -> ... -> out; with `bare_output`, the last block is a
// plain Linear (a head's logits).
class Mlp : public nn::Module {
 public:
  Mlp(int64_t in, int64_t hidden, int64_t out, int blocks, bool layer_norm, bool bare_output,
      uint64_t seed, uint64_t stream)
      : bare_output_(bare_output) {
    for (int b = 0; b < blocks; ++b) {
      const int64_t d_in = b == 0 ? in : hidden, d_out = b == blocks - 1 ? out : hidden;
      linears_.push_back(std::make_unique<nn::Linear>(d_in, d_out, true, nn::Init::kGlorot, seed,
                                                      stream * 16 + b));
      AddChild(absl::StrCat("linear", b), *linears_.back());
      if (layer_norm && !(bare_output && b == blocks - 1)) {
        norms_.push_back(std::make_unique<nn::LayerNorm>(d_out));
        AddChild(absl::StrCat("norm", b), *norms_.back());
      } else {
        norms_.push_back(nullptr);
      }
    }
  }
  ag::Var Forward(const ag::Var& x) const { return From(linears_[0]->Forward(x)); }
  // Forward(EdgeInput(a, xs, xd, e)) without the concatenation: the first product splits as
  // [xs | xd | e] W = (xs W_s)[source] + (xd W_d)[destination] + e W_e, the first two on vertex
  // rows (e may be undefined). The same function up to float rounding.
  ag::Var ForwardEdges(const SparseMatrixPtr& a, const ag::Var& xs, const ag::Var& xd,
                       const ag::Var& e) const {
    const nn::Linear& first = *linears_[0];
    const int64_t ds = xs.row_width(), dd = xd.row_width(), de = e.defined() ? e.row_width() : 0;
    FG_CHECK(first.in_features() == ds + dd + de)
        << "Mlp::ForwardEdges: " << ds << " + " << dd << " + " << de << " columns for "
        << first.in_features() << " inputs";
    auto part = [&](int64_t begin, int64_t width) {
      std::vector<int32_t> rows(width);
      for (int64_t i = 0; i < width; ++i) rows[i] = static_cast<int32_t>(begin + i);
      return ag::GatherRows(first.weight(), Tensor::FromVector(rows));
    };
    ag::Var y = ag::SddmmAdd(a, ag::MatMul(xd, part(ds, dd)), ag::MatMul(xs, part(0, ds)));
    if (e.defined()) y = ag::Add(y, ag::MatMul(e, part(ds + dd, de)));
    return From(first.bias().defined() ? ag::AddBias(y, first.bias()) : y);
  }

 private:
  // The blocks from the first product's output on.
  ag::Var From(const ag::Var& first) const {
    ag::Var h = first;
    for (size_t b = 0; b < linears_.size(); ++b) {
      if (b > 0) h = linears_[b]->Forward(h);
      if (bare_output_ && b + 1 == linears_.size()) break;
      h = norms_[b] ? norms_[b]->ForwardSilu(h) : ag::Silu(h);
    }
    return h;
  }

  bool bare_output_;
  std::vector<std::unique_ptr<nn::Linear>> linears_;
  std::vector<std::unique_ptr<nn::LayerNorm>> norms_;
};

struct InteractionOptions {
  int64_t hidden = 128;
  int blocks = 2;
  bool layer_norm = true;
  std::vector<ag::EdgeReduce> aggregation;
};

class InteractionLayer : public nau::Layer {
 public:
  InteractionLayer(const InteractionOptions& o, uint64_t seed, int index)
      : edge_mlp_(3 * o.hidden, o.hidden, o.hidden, o.blocks, o.layer_norm, false, seed, 10 + 2 * index),
        node_mlp_((1 + o.aggregation.size()) * o.hidden, o.hidden, o.hidden, o.blocks, o.layer_norm,
                  false, seed, 11 + 2 * index),
        aggregation_(o.aggregation) {
    AddChild("edge_mlp", edge_mlp_);
    AddChild("node_mlp", node_mlp_);
  }

  hdg::SchemaTree Schema() const override { return hdg::SchemaTree::Flat("neighbor"); }
  std::string SelectionKey() const override { return "in-neighbors"; }
  bool LocalSelection() const override { return true; }
  void SelectNeighbors(const nau::SelectContext& ctx, int32_t v,
                       hdg::NeighborWriter& out) const override {
    for (int32_t u : ctx.InNeighbors(v)) out.Add(u);
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
  ag::Var Update(nau::UpdateContext&, const ag::Var& self, const ag::Var& nbr) override {
    return ag::Add(node_mlp_.Forward(ag::Concat({self, nbr})), self);
  }

 private:
  Mlp edge_mlp_, node_mlp_;
  std::vector<ag::EdgeReduce> aggregation_;
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
    hidden_ = o.hidden;
    const int64_t f = spec.FeatureDim("node"), fe = ds.graphs->edge_feat.dim(1);
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
    return node_encoder_->Forward(ag::Var(spec.dataset->features.at("node")));
  }
  ag::Var InitialEdgeState(nau::LayerContext&, const nau::ModelSpec&, const Tensor& entry_features) override {
    // Per batch: auto recomputes when keeping every activation would take more than a quarter of
    // the memory still available (about 9 rows of [entries, hidden] per iteration and 13 for the
    // encoders and head, measured), so small events train at full speed and large ones fit.
    const double kept = static_cast<double>(entry_features.rows()) * hidden_ * 4.0 * (9.0 * static_cast<double>(layers_.size()) + 13.0);
    recompute_ = recompute_mode_ == "1" ||
                 (recompute_mode_ == "auto" && kept > 0.25 * static_cast<double>(AvailableMemoryBytes()));
    return Maybe(
        [this](const std::vector<ag::Var>& in) { return std::vector<ag::Var>{edge_encoder_->Forward(in[0])}; },
        {ag::Var(entry_features)});
  }
  ag::Var Head(nau::LayerContext& ctx, const nau::ModelSpec&, const ag::Var& h) override {
    return Maybe(
        [this, a = ctx.edge_matrix](const std::vector<ag::Var>& in) {
          return std::vector<ag::Var>{head_->ForwardEdges(a, in[0], in[0], in[1])};
        },
        {h, ctx.edge_state});
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
         train { epochs: 50 lr: 0.001 batch_size: 1 })pb",
    {{"aggregation", nau::OptionType::kString, "sum",
      "edge messages into hits: comma-separated sum, mean, max, std (concatenated)"},
     {"mlp_layers", nau::OptionType::kInt, "2", "Linear-LayerNorm-SiLU blocks per MLP"},
     {"layernorm", nau::OptionType::kInt, "1", "LayerNorm in the MLPs: 0 or 1"},
     {"recompute", nau::OptionType::kString, "auto",
      "auto: per batch, 1 when keeping every activation would take more than a quarter of the "
      "available memory; 1: keep each iteration's inputs only and recompute its activations in the backward pass "
      "(ag::Checkpoint; the edge encoder and head too), 0: keep every activation"},
     {"pos_weight", nau::OptionType::kFloat, "1", "edge task: weight of a true edge in the loss"},
     {"class_weights", nau::OptionType::kString, "",
      "edge task, multi-class: comma-separated weight per class"},
     {"cut", nau::OptionType::kFloat, "0.5", "edge task: an edge is kept when its score > cut"}},
    [] { return std::make_unique<InteractionNetwork>(); });

}  // namespace fg::udf
