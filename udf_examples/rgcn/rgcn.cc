// R-GCN as NAU UDFs; see rgcn.h for the equations and the mapping onto HDG levels.
#include "udf_examples/rgcn/rgcn.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>

#include "absl/strings/str_cat.h"
#include "flexgraph/base/logging.h"
#include "flexgraph/base/status.h"

namespace fg::udf::rgcn {

absl::StatusOr<Options> Options::FromSpec(const nau::ModelSpec& spec) {
  Options o;
  FG_ASSIGN_OR_RETURN(o.num_bases, spec.options.Int("num_bases"));
  if (o.num_bases < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model option 'num_bases': must be 0 (full per-relation weights) or positive, got ",
        o.num_bases));
  }
  FG_ASSIGN_OR_RETURN(o.featureless, nau::ParseFeatureless(spec.options.String("featureless")));
  return o;
}

std::vector<nau::Metapath> RelationDirections(const graph::HeteroGraph& g) {
  std::vector<nau::Metapath> out;
  auto add = [&](int src, int dst, int relation, bool forward) {
    nau::Metapath mp;
    mp.node_types = {src, dst};
    mp.steps = {{.relation = relation, .forward = forward}};
    mp.name = mp.Describe(g);
    out.push_back(std::move(mp));
  };
  for (size_t k = 0; k < g.relations.size(); ++k) {
    const graph::Relation& rel = g.relations[k];
    const int src = g.TypeIndex(rel.src_type), dst = g.TypeIndex(rel.dst_type);
    FG_CHECK(src >= 0 && dst >= 0) << "relation " << rel.Key() << " joins unknown node types";
    // Into dst: the root walks the relation back to its sources.
    add(dst, src, static_cast<int>(k), /*forward=*/false);
    if (!rel.symmetric) add(src, dst, static_cast<int>(k), /*forward=*/true);
  }
  return out;
}

int64_t EffectiveBases(int64_t num_bases, int64_t relations) {
  return num_bases == 0 || num_bases >= relations ? relations : num_bases;
}

ag::Var MixRelations(const ag::Var& means, const ag::Var& coefficients, int64_t out) {
  const int64_t r = coefficients.rows(), b = coefficients.row_width();
  FG_CHECK(r > 0 && means.row_width() == out * b && means.rows() % r == 0)
      << "MixRelations: means " << means.value().ShapeString() << " for coefficients "
      << coefficients.value().ShapeString() << " and width " << out;
  const int64_t n = means.rows() / r;
  if (n == 0) return ag::Var(Tensor::Zeros({0, out}));
  // Relation r's block [n, out * B] is [n * out, B] row-major: one product with a_r per relation.
  ag::Var per_relation =
      ag::BatchedMatMul(ag::Reshape(means, {r, n * out, b}), ag::Reshape(coefficients, {r, b, 1}));
  return ag::Reshape(ag::SumRows(ag::Reshape(per_relation, {r, n * out})), {n, out});
}

// --- the NAU layer -----------------------------------------------------------------------------
namespace {

// `relations`: the relation-directions into the node types this layer has roots of; in: input
// width; out: output width.
class RgcnLayer : public nau::Layer {
 public:
  RgcnLayer(const nau::ModelSpec& spec, const Options& opt, std::vector<nau::Metapath> relations,
            int64_t in, int64_t out, bool last, int index)
      : space_(spec.vertices),
        in_(in),
        out_(out),
        last_(last),
        dropout_(spec.dropout),
        by_type_(spec.vertices->num_types()) {
    const graph::PartInfo* part = spec.dataset->part ? &*spec.dataset->part : nullptr;
    // Neighbour lists read the whole graph: built where it is held (on one part of several the
    // framework expands the declared selection across the workers).
    if (part == nullptr || part->num_parts() == 1) {
      walker_.emplace(&spec.dataset->graph, spec.vertices, relations);
    }
    const int64_t r = static_cast<int64_t>(relations.size());
    for (int m = 0; m < r; ++m) by_type_[relations[m].start_type()].push_back(m);
    selection_.metapaths = std::move(relations);
    selection_.by_type = by_type_;
    selection_.max_instances = 0;  // every neighbour
    bases_ = EffectiveBases(opt.num_bases, r);
    const uint64_t stream = 1000 * static_cast<uint64_t>(index + 1);
    // Each basis Glorot-initialised as an [in, out] matrix; coefficients with variance 1 / B, so
    // that every W_r has a basis' scale.
    const double glorot = std::sqrt(static_cast<double>(in + out * bases_) / (in + out));
    basis_ = AddParameter("bases", nn::Initialize({in, out * bases_}, nn::Init::kGlorot, spec.seed,
                                                  stream, static_cast<float>(glorot)));
    if (bases_ < r) {
      const double scale = std::sqrt(static_cast<double>(r + bases_) / (2.0 * bases_));
      coefficients_ =
          AddParameter("coefficients", nn::Initialize({r, bases_}, nn::Init::kGlorot, spec.seed,
                                                      stream + 1, static_cast<float>(scale)));
    } else {  // full weights: relation r uses basis r alone
      Tensor eye = Tensor::Zeros({r, r});
      for (int64_t k = 0; k < r; ++k) eye.f32()[k * r + k] = 1.0f;
      coefficients_ = ag::Var(eye);
    }
    self_ = nn::Linear(in, out, /*bias=*/true, nn::Init::kGlorot, spec.seed, stream + 2);
    AddChild("self", self_);
  }

  hdg::SchemaTree Schema() const override {
    std::vector<hdg::MetapathType> types;
    for (const nau::Metapath& mp : selection_.metapaths) types.push_back(mp.SchemaType());
    return hdg::SchemaTree::Metapaths(std::move(types));
  }
  const nau::MetapathSelection* Instances() const override { return &selection_; }
  // Hidden layers select the same pairs for the same roots.
  std::string SelectionKey() const override { return last_ ? "" : "rgcn:all-relations"; }

  void SelectNeighbors(const nau::SelectContext& ctx, int32_t root,
                       hdg::NeighborWriter& out) const override {
    const int type = space_->TypeOf(root);
    const int32_t local = static_cast<int32_t>(root - space_->type_offset(type));
    RandomStream rng = ctx.Rng(root);  // unused: every instance is taken
    thread_local std::vector<int32_t> ids;
    for (int m : by_type_[type]) {
      ids.clear();
      const int64_t k = walker_->Enumerate(m, local, /*max_instances=*/0, &rng, &ids);
      for (int64_t i = 0; i < k; ++i) out.AddInstance(m, {ids[2 * i], ids[2 * i + 1]});
    }
  }

  // The basis products of the (dropped-out) input rows: [rows, out * B], columns (o, b).
  ag::Var Message(nau::LayerContext& ctx, const ag::Var& h) override {
    ag::Var x = ctx.Dropout(h, dropout_, 0, ctx.table_global_ids);
    return ag::MatMul(x, basis_);
  }

  nau::Aggregator LevelAggregator(int level) const override {
    using nau::Aggregator;
    using nau::Strategy;
    switch (level) {
      case 1:
        return Aggregator::Custom(
            absl::StrCat("neighbour rows of the basis products, [pairs, ", out_ * bases_, "]"),
            Strategy::kDense, [this](const nau::LevelInput& in) { return Neighbours(in); });
      case 2:
        return Aggregator::Mean();
      default:
        return Aggregator::Custom(absl::StrCat("relation mix of ", selection_.metapaths.size(),
                                               " relation-directions over ", bases_, " bases"),
                                  Strategy::kDense,
                                  [this](const nau::LevelInput& in) { return Mix(in); });
    }
  }

  ag::Var Update(nau::UpdateContext& ctx, const ag::Var& self, const ag::Var& nbr) override {
    // Rows keyed by global id and column: the mask Message gave the same vertices.
    ag::Var x = ctx.Dropout(self, dropout_, 0, ctx.root_global_ids);
    ag::Var h = ag::Add(self_.Forward(x), nbr);
    return last_ ? h : ag::Relu(h);
  }

  // Message: in x (out * B) per input row; levels aggregate out * B wide rows; Update: the self
  // term and the relation mix per root.
  nau::LayerCost Cost(int64_t, int64_t) const override {
    const int64_t width = out_ * bases_;
    const double r = static_cast<double>(selection_.metapaths.size());
    return {.in = in_,
            .out = out_,
            .level_widths = {width},
            .message_flops = 2.0 * in_ * width,
            .update_flops = 2.0 * in_ * out_ + 2.0 * r * width};
  }

 private:
  // Level 1: instance (root, neighbour) takes the neighbour's row.
  ag::Var Neighbours(const nau::LevelInput& in) const {
    const Csr& c = in.lvl().csr();
    Tensor idx = Tensor::Empty({c.num_rows}, DType::kInt32);
    for (int64_t i = 0; i < c.num_rows; ++i) {
      FG_CHECK(c.degree(i) == 2) << "instance " << i << " has " << c.degree(i) << " vertices";
      idx.i32()[i] = c.col()[c.row_ptr()[i] + 1];
    }
    return ag::GatherRows(in.children, idx);
  }

  // Level 3: child r of root i is the group (i, r); MixRelations wants them relation-major.
  ag::Var Mix(const nau::LevelInput& in) const {
    const Csr& c = in.lvl().csr();
    const int64_t n = c.num_rows, r = static_cast<int64_t>(selection_.metapaths.size());
    Tensor idx = Tensor::Empty({r * n}, DType::kInt32);
    bool identity = in.children.rows() == r * n;
    for (int64_t i = 0; i < n; ++i) {
      FG_CHECK(c.degree(i) == r) << "root " << i << " has " << c.degree(i) << " groups, expected "
                                 << r;
      for (int64_t k = 0; k < r; ++k) {
        const int32_t g = c.col()[c.row_ptr()[i] + k];
        idx.i32()[k * n + i] = g;
        identity = identity && g == k * n + i;
      }
    }
    return MixRelations(identity ? in.children : ag::GatherRows(in.children, idx), coefficients_,
                        out_);
  }

  const nau::VertexSpace* space_;
  int64_t in_, out_;
  bool last_;
  float dropout_;
  int64_t bases_ = 0;
  std::optional<nau::MetapathEnumerator> walker_;  // null on one part of several
  nau::MetapathSelection selection_;
  std::vector<std::vector<int>> by_type_;  // node type -> its relation-directions
  ag::Var basis_;                          // [in, out * B], columns (o, b)
  ag::Var coefficients_;                   // [R, B]; a constant identity for full weights
  nn::Linear self_;                        // W_0 and the bias
};

// --- the model: type-specific projections, then the layers
// ----------------------------------------
class Rgcn : public nau::Model {
 public:
  absl::Status Build(const nau::ModelSpec& spec) override {
    FG_ASSIGN_OR_RETURN(Options opt, Options::FromSpec(spec));
    if (spec.layers < 1) {
      return absl::InvalidArgumentError(absl::StrCat("layers must be positive, got ", spec.layers));
    }
    if (spec.hidden < 1) {
      return absl::InvalidArgumentError(absl::StrCat("hidden must be positive, got ", spec.hidden));
    }
    const int target = spec.vertices->TypeIndex(spec.target_type);
    if (target < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("target type '", spec.target_type, "' is not a node type"));
    }
    const std::vector<nau::Metapath> all = RelationDirections(spec.dataset->graph);
    std::vector<nau::Metapath> into_target;
    for (const nau::Metapath& mp : all) {
      if (mp.start_type() == target) into_target.push_back(mp);
    }
    if (into_target.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("rgcn: no relation joins the target type '",
                                                     spec.target_type, "' to other vertices"));
    }
    input_ = nau::TypedInput(spec, spec.hidden, opt.featureless, /*stream_base=*/10);
    AddChild("", input_);
    layers_.clear();
    for (int i = 0; i < spec.layers; ++i) {
      const bool last = i == spec.layers - 1;
      // Hidden layers compute every vertex (the next layer's table); the last the target type's.
      layers_.push_back(
          std::make_unique<RgcnLayer>(spec, opt, last ? into_target : all, spec.hidden,
                                      last ? spec.num_classes : spec.hidden, last, i));
    }
    AdoptLayerParameters();
    return absl::OkStatus();
  }

  int num_layers() const override { return static_cast<int>(layers_.size()); }
  nau::Layer& layer(int i) override { return *layers_[i]; }
  ag::Var Input(nau::LayerContext&, const nau::ModelSpec& spec) override {
    return input_.Forward(spec);
  }

 private:
  nau::TypedInput input_;
  std::vector<std::unique_ptr<RgcnLayer>> layers_;
};

}  // namespace

std::unique_ptr<nau::Model> MakeRgcn() { return std::make_unique<Rgcn>(); }

FG_REGISTER_MODEL(rgcn,
                  "R-GCN: per-relation mean aggregation over typed relations in both directions, "
                  "basis-decomposed relation weights, self connection (Schlichtkrull et al.)",
                  // DGL's entity-classification setup (2 layers, Adam at lr 0.01, weight decay
                  // 5e-4), with hidden 64, dropout 0.7 and row-normalised features chosen on IMDB
                  // and DBLP (few labels: strong dropout helps both).
                  R"pb(model { hidden: 64 layers: 2 dropout: 0.7 }
                       train { epochs: 200 patience: 20 lr: 0.01 weight_decay: 5e-4 }
                       dataset { normalize_features: true })pb",
                  {{"num_bases", nau::OptionType::kInt, "2",
                    "bases of the relation weights (0 or at least the relation-directions: full "
                    "per-relation weights)"},
                   nau::FeaturelessOption()},
                  MakeRgcn);

}  // namespace fg::udf::rgcn
