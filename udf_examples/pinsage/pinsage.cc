#include "udf_examples/pinsage/pinsage.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "flexgraph/autograd/functions.h"
#include "flexgraph/base/status.h"
#include "flexgraph/ops/ops.h"
#include "nau/dropout_linear.h"

namespace fg::udf {
namespace {

// int32 row indices lo, lo + 1, ..., hi - 1.
Tensor RowRange(int64_t lo, int64_t hi) {
  Tensor t = Tensor::Empty({hi - lo}, DType::kInt32);
  for (int64_t i = lo; i < hi; ++i) t.i32()[i - lo] = static_cast<int32_t>(i);
  return t;
}

// The relation whose links a link-prediction run predicts: option `relation`, else the only one
// with an edge split.
absl::StatusOr<const graph::Relation*> PredictedRelation(const nau::ModelSpec& spec) {
  const graph::Dataset& ds = *spec.dataset;
  std::string key = spec.options.String("relation");
  if (key.empty()) {
    if (ds.edge_splits.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pinsage: dataset '", ds.name, "' has ", ds.edge_splits.size(),
          " edge splits; choose the predicted one with relation=<src___name___dst>"));
    }
    key = ds.edge_splits.begin()->first;
  }
  const graph::Relation* r = ds.graph.FindRelation(key);
  if (r == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinsage: relation '", key, "' not in dataset '", ds.name, "'"));
  }
  return r;
}

}  // namespace

absl::StatusOr<PinSageOptions> PinSageOptions::FromSpec(const nau::ModelSpec& spec,
                                                         nau::Task task) {
  PinSageOptions o;
  const nau::OptionValues& opt = spec.options;
  // Link prediction walks wider unless told otherwise: a user listens to about 35 artists.
  const bool link = task == nau::Task::kLinkPrediction;
  auto preset = [&](const char* name, int64_t link_value) -> absl::StatusOr<int64_t> {
    if (link && !opt.Has(name)) return link_value;
    return opt.Int(name);
  };
  FG_ASSIGN_OR_RETURN(int64_t traces, preset("num_traces", 20));
  FG_ASSIGN_OR_RETURN(int64_t hops, opt.Int("n_hops"));
  FG_ASSIGN_OR_RETURN(int64_t top_k, preset("top_k", 30));
  FG_ASSIGN_OR_RETURN(o.walk.restart_prob, opt.Float("restart_prob"));
  FG_ASSIGN_OR_RETURN(int64_t reselect, opt.Int("reselect_every"));
  FG_ASSIGN_OR_RETURN(int64_t emb, opt.Int("embedding_dim"));
  FG_ASSIGN_OR_RETURN(int64_t pad, opt.Int("pad"));
  if (pad != 0 && pad != 1) {
    return absl::InvalidArgumentError(absl::StrCat("pinsage: pad must be 0 or 1, got ", pad));
  }
  o.walk.pad = pad == 1;
  auto narrow = [](int64_t v) {
    return static_cast<int>(std::clamp<int64_t>(v, -(int64_t{1} << 30), int64_t{1} << 30));
  };
  o.walk.num_traces = narrow(traces);
  o.walk.n_hops = narrow(hops);
  o.walk.top_k = narrow(top_k);
  o.reselect_every = narrow(reselect);
  o.embedding_dim = narrow(emb);
  o.walk_types = opt.String("walk");
  const std::string count = link && !opt.Has("count") ? "all" : opt.String("count");
  if (count != "root_type" && count != "all") {
    return absl::InvalidArgumentError(
        absl::StrCat("pinsage: count must be root_type or all, got '", count, "'"));
  }
  o.walk.count_all_types = count == "all";
  FG_RETURN_IF_ERROR(o.walk.Validate());
  if (o.reselect_every < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinsage: reselect_every must be 0 (select once) or positive, got ",
                     o.reselect_every));
  }
  if (o.embedding_dim < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinsage: embedding_dim must be positive, got ", o.embedding_dim));
  }
  return o;
}

PinSageLayer::PinSageLayer(std::shared_ptr<const WalkPlan> plan, const PinSageOptions& options,
                           int64_t in, int64_t pool, int64_t out, bool last, float dropout,
                           uint64_t seed, int index)
    : plan_(std::move(plan)),
      options_(options),
      pool_(in, pool, /*bias=*/true, nn::Init::kGlorot, seed, 2 * index),
      update_(in + pool, out, /*bias=*/true, nn::Init::kGlorot, seed, 2 * index + 1),
      last_(last),
      dropout_(dropout) {
  AddChild("pool", pool_);
  AddChild("update", update_);
}

void PinSageLayer::SelectNeighbors(const nau::SelectContext& ctx, int32_t root,
                                   hdg::NeighborWriter& out) const {
  nau::WalkLocally(*plan_, ctx, root, out);
}

std::string PinSageLayer::SelectionKey() const {
  if (SampledSelection()) return "";
  const WalkOptions& w = options_.walk;
  return absl::StrCat("pinsage:", plan_->ToString(), ":traces=", w.num_traces, ":hops=", w.n_hops,
                      ":top_k=", w.top_k, ":restart=", w.restart_prob,
                      w.count_all_types ? ":all" : "", w.pad ? ":pad" : "");
}

ag::Var PinSageLayer::Message(nau::LayerContext& ctx, const ag::Var& h) {
  return ag::BiasRelu(nau::DropoutMatMul(ctx, h, ctx.table_global_ids, pool_.weight(), ag::Var(), dropout_, 0),
                      pool_.bias());
}

nau::LayerCost PinSageLayer::Cost(int64_t, int64_t) const {
  const int64_t in = pool_.in_features(), pool = pool_.out_features();
  return {.in = in,
          .out = update_.out_features(),
          .level_widths = {pool},
          .message_flops = 2.0 * in * pool,
          .update_flops = 2.0 * update_.in_features() * update_.out_features()};
}

ag::Var PinSageLayer::Update(nau::UpdateContext& ctx, const ag::Var& self, const ag::Var& nbr) {
  // W [s || n] + w as s W_self + n W_nbr + w with W's two row blocks: no concatenated copy, and
  // the self term takes the sparse input path. The same counter-based mask as Message: a vertex's
  // dropout is identical in both roles.
  const int64_t in = self.row_width(), pool = nbr.row_width();
  ag::Var w_self = ag::GatherRows(update_.weight(), RowRange(0, in));
  ag::Var w_nbr = ag::GatherRows(update_.weight(), RowRange(in, in + pool));
  ag::Var z = nau::DropoutMatMul(ctx, self, ctx.root_global_ids, w_self, ag::Var(), dropout_, 0, nbr, w_nbr);
  return last_ ? ag::AddBias(z, update_.bias()) : ag::RowL2Normalize(ag::BiasRelu(z, update_.bias()));
}

absl::Status PinSage::Build(const nau::ModelSpec& spec) {
  if (spec.layers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("layers must be positive, got ", spec.layers));
  }
  if (spec.hidden < 1) {
    return absl::InvalidArgumentError(absl::StrCat("hidden must be positive, got ", spec.hidden));
  }
  const graph::Dataset& ds = *spec.dataset;
  const nau::VertexSpace& space = *spec.vertices;
  const bool labeled = spec.num_classes > 0 && ds.labels.count(spec.target_type) != 0;
  if (labeled) {
    task_ = nau::Task::kNodeClassification;
    FG_ASSIGN_OR_RETURN(options_, PinSageOptions::FromSpec(spec, task_));
  } else if (!ds.edge_splits.empty()) {
    task_ = nau::Task::kLinkPrediction;
    FG_ASSIGN_OR_RETURN(options_, PinSageOptions::FromSpec(spec, task_));
    if (options_.walk_types.empty() && !ds.graph.IsHomogeneous()) {
      FG_ASSIGN_OR_RETURN(const graph::Relation* r, PredictedRelation(spec));
      options_.walk_types = absl::StrCat(r->dst_type, "-", r->src_type, "-", r->dst_type);
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "pinsage: dataset '", ds.name, "' has neither labels for node type '", spec.target_type,
        "' nor an edge split to predict"));
  }
  FG_ASSIGN_OR_RETURN(WalkPlan plan, WalkPlan::Make(ds, space, options_.walk_types, options_.walk));
  plan_ = std::make_shared<const WalkPlan>(std::move(plan));

  // Inputs: the features of a single featured type as they are; otherwise every type maps to
  // embedding_dim, featured types by a projection, featureless ones by a learned table.
  const int64_t emb_dim = options_.embedding_dim > 0 ? options_.embedding_dim : spec.hidden;
  raw_features_ = space.num_types() == 1 && spec.FeatureDim(space.type_name(0)) > 0;
  int64_t in = raw_features_ ? spec.FeatureDim(space.type_name(0)) : emb_dim;
  projections_.clear();
  embeddings_.clear();
  type_rows_.clear();
  embedding_rows_.clear();
  input_rows_ = 0;
  if (!raw_features_) {
    // The input holds this process's vertices in id order: all of them, or a part's own.
    const graph::PartInfo* part = ds.part ? &*ds.part : nullptr;
    for (int t = 0; t < space.num_types(); ++t) {
      const std::string& name = space.type_name(t);
      const int64_t f = spec.FeatureDim(name);
      const int64_t first = part ? part->begin(t) : 0, n = part ? part->end(t) - first : space.type_size(t);
      std::vector<int32_t> rows(n);
      for (int64_t i = 0; i < n; ++i) rows[i] = static_cast<int32_t>(input_rows_ + i);
      input_rows_ += n;
      type_rows_.push_back(Tensor::FromVector(rows));
      // A part's rows of a learned table: its vertices' source-dataset ids (as in every run).
      embedding_rows_.push_back(part ? part->SourceRows(name) : Tensor());
      if (f > 0) {
        projections_.push_back(std::make_unique<nn::Linear>(f, emb_dim, /*bias=*/true,
                                                            nn::Init::kGlorot, spec.seed, 1000 + t));
        embeddings_.push_back(nullptr);
        AddChild(absl::StrCat("input.", name), *projections_.back());
      } else {
        projections_.push_back(nullptr);
        embeddings_.push_back(
            std::make_unique<nn::Embedding>(space.type_size(t), emb_dim, spec.seed, 1000 + t));
        AddChild(absl::StrCat("embedding.", name), *embeddings_.back());
      }
    }
  }

  const int64_t out_last =
      task_ == nau::Task::kNodeClassification ? spec.num_classes : static_cast<int64_t>(spec.hidden);
  layers_.clear();
  for (int i = 0; i < spec.layers; ++i) {
    const bool last = i == spec.layers - 1;
    const int64_t d_in = i == 0 ? in : spec.hidden;
    const int64_t d_out = last ? out_last : spec.hidden;
    layers_.push_back(std::make_unique<PinSageLayer>(plan_, options_, d_in, spec.hidden, d_out,
                                                     last, spec.dropout, spec.seed, i));
  }
  AdoptLayerParameters();
  return absl::OkStatus();
}

ag::Var PinSage::Input(nau::LayerContext& ctx, const nau::ModelSpec& spec) {
  const nau::VertexSpace& space = *spec.vertices;
  if (raw_features_) return ag::Var(spec.dataset->features.at(space.type_name(0)));
  ag::Var x;
  for (int t = 0; t < space.num_types(); ++t) {
    ag::Var part = projections_[t]
                       ? projections_[t]->Forward(ag::Var(spec.dataset->features.at(space.type_name(t))))
                       : embeddings_[t]->table();
    if (!projections_[t] && embedding_rows_[t].defined()) part = ag::GatherRows(part, embedding_rows_[t]);
    if (space.num_types() == 1) return part;
    ag::Var placed = ag::ScatterAddRows(part, type_rows_[t], input_rows_);
    x = x.defined() ? ag::Add(x, placed) : placed;
  }
  return x;
}

ag::Var PinSage::InputRows(nau::LayerContext& ctx, const nau::ModelSpec& spec, const Tensor& ids) {
  if (raw_features_ || spec.dataset->part) return Model::InputRows(ctx, spec, ids);
  // Per type, only the rows asked for: projected features or rows of the learned table.
  const nau::VertexSpace& space = *spec.vertices;
  std::vector<std::vector<int32_t>> at(space.num_types()), local(space.num_types());
  for (int64_t k = 0; k < ids.numel(); ++k) {
    const int t = space.TypeOf(ids.i64()[k]);
    at[t].push_back(static_cast<int32_t>(k));
    local[t].push_back(static_cast<int32_t>(ids.i64()[k] - space.type_offset(t)));
  }
  ag::Var x;
  for (int t = 0; t < space.num_types(); ++t) {
    if (at[t].empty()) continue;
    const Tensor rows = Tensor::FromVector(local[t]);
    ag::Var part = projections_[t]
                       ? projections_[t]->Forward(ag::Var(ops::GatherRows(
                             spec.dataset->features.at(space.type_name(t)), rows)))
                       : ag::GatherRows(embeddings_[t]->table(), rows);
    ag::Var placed = ag::ScatterAddRows(part, Tensor::FromVector(at[t]), ids.numel());
    x = x.defined() ? ag::Add(x, placed) : placed;
  }
  return x;
}

std::vector<int32_t> PinSage::Roots(int i, const nau::ModelSpec& spec) const {
  if (task_ != nau::Task::kLinkPrediction) return Model::Roots(i, spec);
  std::vector<int32_t> roots(spec.vertices->size());
  for (size_t v = 0; v < roots.size(); ++v) roots[v] = static_cast<int32_t>(v);
  return roots;
}

namespace {

std::unique_ptr<nau::Model> MakePinSage() { return std::make_unique<PinSage>(); }

}  // namespace

FG_REGISTER_MODEL(pinsage,
                  "PinSage: random-walk top-k neighbours, importance pooling (Ying et al.); node "
                  "classification, or link prediction on datasets with an edge split",
                  R"pb(model { hidden: 64 layers: 2 dropout: 0.5 }
                       train { epochs: 200 lr: 0.01 weight_decay: 5e-4 }
                       dataset { normalize_features: true })pb",
                  {{"num_traces", nau::OptionType::kInt, "10", "random walks per root (20 for link prediction)"},
                   {"n_hops", nau::OptionType::kInt, "3", "steps per walk"},
                   {"top_k", nau::OptionType::kInt, "10",
                    "neighbours kept: the most visited vertices (30 for link prediction)"},
                   {"restart_prob", nau::OptionType::kFloat, "0", "probability of restarting a walk at its root"},
                   {"reselect_every", nau::OptionType::kInt, "0", "redraw the walks every k epochs (0: once)"},
                   {"embedding_dim", nau::OptionType::kInt, "0", "width of the pooled neighbourhood (0: hidden)"},
                   {"pad", nau::OptionType::kInt, "0",
                    "1: pad every root to top_k neighbours (uniform arity, dense execution)"},
                   {"walk", nau::OptionType::kString, "",
                    "typed walk such as artist-user-artist (\"\": any type; link prediction: dst-src-dst)"},
                   {"count", nau::OptionType::kString, "root_type",
                    "visits counted: root_type or all (all for link prediction)"},
                   {"relation", nau::OptionType::kString, "",
                    "link prediction: the predicted relation src___name___dst (\"\": the only edge split)"}},
                  MakePinSage, /*predicts_links=*/true);

}  // namespace fg::udf
